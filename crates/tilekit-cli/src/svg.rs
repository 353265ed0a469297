//! The tiny SVG builder now lives in the tile layer ([`tilekit_tile::svg`]), where the
//! distribution pictures are drawn; it is re-exported here for the CLI's own pictures.
//!
//! ```
//! use tilekit_cli::svg::{Style, Svg};
//! let mut svg = Svg::new(20.0, 10.0);
//! svg.rect(0.0, 0.0, 20.0, 10.0, &Style::new().fill("white"));
//! assert!(svg.finish().contains("<rect x=\"0\" y=\"0\" width=\"20\" height=\"10\" fill=\"white\"/>"));
//! ```

pub use tilekit_tile::svg::*;
