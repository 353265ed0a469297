//! A tiny SVG builder: shapes with attribute lists, text, arrow markers; no dependencies.
//!
//! Pictures are built in user units (pixels) and written as one standalone SVG document:
//!
//! ```
//! use tilekit_tile::svg::{Style, Svg};
//! let mut svg = Svg::new(120.0, 40.0);
//! svg.arrow_marker("arrow", "#333");
//! svg.rect(10.0, 10.0, 40.0, 20.0, &Style::new().fill("#cde").stroke("#345", 1.0).attr("rx", 4));
//! svg.polyline(&[(50.0, 20.0), (70.0, 20.0), (90.0, 20.0)], &Style::new().stroke("#333", 1.5).fill("none").marker_mid("arrow"));
//! svg.text(100.0, 24.0, "a < b", &Style::new().attr("font-size", 10));
//! let doc = svg.finish();
//! assert!(doc.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"120\" height=\"40\""));
//! assert!(doc.contains("<text x=\"100\" y=\"24\" font-size=\"10\">a &lt; b</text>"));
//! assert!(doc.contains("marker-mid=\"url(#arrow)\""));
//! ```

use std::fmt::Write as _;

/// Escapes text for use in SVG character data and attribute values.
///
/// ```
/// assert_eq!(tilekit_tile::svg::escape(r#"<a & "b">"#), "&lt;a &amp; &quot;b&quot;&gt;");
/// ```
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// A number as SVG wants it: at most two decimals, no trailing zeros.
///
/// ```
/// use tilekit_tile::svg::num;
/// assert_eq!(num(12.0), "12");
/// assert_eq!(num(0.126), "0.13");
/// assert_eq!(num(-3.5), "-3.5");
/// ```
pub fn num(v: f64) -> String {
    let s = format!("{v:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".to_string()
    } else {
        s.to_string()
    }
}

/// Presentation attributes of one element, written in the order they were added.
///
/// ```
/// use tilekit_tile::svg::Style;
/// let s = Style::new().fill("red").stroke("black", 2.0).dash("4 2");
/// assert_eq!(s.render(), r#" fill="red" stroke="black" stroke-width="2" stroke-dasharray="4 2""#);
/// ```
#[derive(Debug, Clone, Default)]
pub struct Style {
    attrs: Vec<(String, String)>,
}

impl Style {
    /// No attributes.
    pub fn new() -> Self {
        Self::default()
    }

    /// Any attribute (the value is escaped when rendered).
    pub fn attr(mut self, name: &str, value: impl std::fmt::Display) -> Self {
        self.attrs.push((name.to_string(), value.to_string()));
        self
    }

    /// `fill`.
    pub fn fill(self, color: &str) -> Self {
        self.attr("fill", color)
    }

    /// `stroke` and `stroke-width`.
    pub fn stroke(self, color: &str, width: f64) -> Self {
        self.attr("stroke", color).attr("stroke-width", num(width))
    }

    /// `stroke-dasharray`.
    pub fn dash(self, pattern: &str) -> Self {
        self.attr("stroke-dasharray", pattern)
    }

    /// `marker-mid` pointing at a marker made by [`Svg::arrow_marker`].
    pub fn marker_mid(self, id: &str) -> Self {
        self.attr("marker-mid", format!("url(#{id})"))
    }

    /// `marker-end` pointing at a marker made by [`Svg::arrow_marker`].
    pub fn marker_end(self, id: &str) -> Self {
        self.attr("marker-end", format!("url(#{id})"))
    }

    /// The attributes as written inside a tag (each preceded by a space).
    pub fn render(&self) -> String {
        let mut s = String::new();
        for (k, v) in &self.attrs {
            let _ = write!(s, " {k}=\"{}\"", escape(v));
        }
        s
    }
}

/// An SVG document under construction. See the [module documentation](self).
#[derive(Debug, Clone)]
pub struct Svg {
    width: f64,
    height: f64,
    defs: String,
    body: String,
}

impl Svg {
    /// An empty picture of `width × height` user units (pixels).
    ///
    /// ```
    /// let doc = tilekit_tile::svg::Svg::new(10.0, 5.0).finish();
    /// assert!(doc.contains("viewBox=\"0 0 10 5\""));
    /// ```
    pub fn new(width: f64, height: f64) -> Self {
        Svg { width, height, defs: String::new(), body: String::new() }
    }

    /// Defines a triangular arrowhead marker `id` in `color`, oriented along the path.
    pub fn arrow_marker(&mut self, id: &str, color: &str) {
        let _ = writeln!(
            self.defs,
            "<marker id=\"{}\" viewBox=\"0 0 10 10\" refX=\"5\" refY=\"5\" markerWidth=\"7\" \
             markerHeight=\"7\" orient=\"auto\" markerUnits=\"userSpaceOnUse\">\
             <path d=\"M0,0 L10,5 L0,10 z\" fill=\"{}\"/></marker>",
            escape(id),
            escape(color)
        );
    }

    /// A rectangle.
    pub fn rect(&mut self, x: f64, y: f64, w: f64, h: f64, style: &Style) {
        let _ = writeln!(
            self.body,
            "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"{}/>",
            num(x),
            num(y),
            num(w),
            num(h),
            style.render()
        );
    }

    /// A circle.
    pub fn circle(&mut self, cx: f64, cy: f64, r: f64, style: &Style) {
        let _ = writeln!(
            self.body,
            "<circle cx=\"{}\" cy=\"{}\" r=\"{}\"{}/>",
            num(cx),
            num(cy),
            num(r),
            style.render()
        );
    }

    /// A straight line.
    pub fn line(&mut self, a: (f64, f64), b: (f64, f64), style: &Style) {
        let _ = writeln!(
            self.body,
            "<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\"{}/>",
            num(a.0),
            num(a.1),
            num(b.0),
            num(b.1),
            style.render()
        );
    }

    /// A polyline through `points` (use `fill="none"` in the style for an open path).
    pub fn polyline(&mut self, points: &[(f64, f64)], style: &Style) {
        let pts: Vec<String> =
            points.iter().map(|(x, y)| format!("{},{}", num(*x), num(*y))).collect();
        let _ = writeln!(self.body, "<polyline points=\"{}\"{}/>", pts.join(" "), style.render());
    }

    /// Text whose anchor point is `(x, y)` (the baseline; use `text-anchor` and
    /// `dominant-baseline` in the style to center it).
    pub fn text(&mut self, x: f64, y: f64, text: &str, style: &Style) {
        let _ = writeln!(
            self.body,
            "<text x=\"{}\" y=\"{}\"{}>{}</text>",
            num(x),
            num(y),
            style.render(),
            escape(text)
        );
    }

    /// The finished document.
    pub fn finish(self) -> String {
        let (w, h) = (num(self.width), num(self.height));
        let mut out = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" \
             viewBox=\"0 0 {w} {h}\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
        );
        if !self.defs.is_empty() {
            out.push_str("<defs>\n");
            out.push_str(&self.defs);
            out.push_str("</defs>\n");
        }
        out.push_str(&self.body);
        out.push_str("</svg>\n");
        out
    }
}
