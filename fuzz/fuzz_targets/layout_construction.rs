//! Descriptors, adaptors, space-filling curves, swizzles and tile distributions built from
//! structured arbitrary input through the validating constructors (lengths biased towards zero,
//! negatives and the i32/u32/i64 edges), then evaluated: `calculate_offset` and coordinate moves on
//! in-range coordinates (and ones of a wrong rank), validity, vector
//! guarantees, descriptions; for distributions the P/Y → X maps, slicing and the `show` paths.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use tilekit_fuzz::{short_vec, Len, Settle};
use tilekit_layout::swizzle::{morton_tile, xor_lds, HopperSwizzle, TiledMorton};
use tilekit_layout::transform::MergeVariant;
use tilekit_layout::{Coordinate, SpaceFillingCurve, TensorAdaptor, TensorDescriptor, Transform};
use tilekit_tile::encoding::EncodingSpec;
use tilekit_tile::TileDistribution;

fn lens(v: &[Len]) -> Vec<i64> {
    v.iter().map(|l| l.0).collect()
}

/// How the base descriptor is made.
#[derive(Debug, Arbitrary)]
enum Base {
    Naive { lengths: Vec<Len>, strides: Vec<Len>, vector: Option<(Len, Len)> },
    Packed { lengths: Vec<Len>, vector: Option<Len> },
    Aligned { lengths: Vec<Len>, align: Len },
    WithOffset { lengths: Vec<Len>, strides: Vec<Len>, offset: Len },
    MortonTile { row_bits: u8, col_bits: u8 },
    TiledMorton { height: Len, width: Len, tile: Len },
    Hopper { which: u8, rows: Len, cols: Len, elem_bytes: Len },
    XorLds { m: Len, k: Len, kpack: Len, elem_bytes: Len },
}

/// One transform, with the arguments of its constructor.
#[derive(Debug, Arbitrary)]
enum T {
    PassThrough(Len),
    Pad(Len, Len, Len, bool),
    LeftPad(Len, Len, bool),
    RightPad(Len, Len, bool),
    Embed(Vec<Len>, Vec<Len>),
    Merge(Vec<Len>, bool),
    Unmerge(Vec<Len>),
    Freeze(Len),
    Insert(Len),
    Replicate(Vec<Len>),
    Slice(Len, Len),
    Modulo(Len, Len),
    Xor(Len, Len),
    Offset(Len, Len),
    Indexing(Vec<Len>),
}

impl T {
    fn build(&self) -> Option<Transform<i64>> {
        let t = match self {
            T::PassThrough(l) => Transform::pass_through(l.0),
            T::Pad(l, a, b, s) => Transform::pad(l.0, a.0, b.0, *s),
            T::LeftPad(l, a, s) => Transform::left_pad(l.0, a.0, *s),
            T::RightPad(l, a, s) => Transform::right_pad(l.0, a.0, *s),
            T::Embed(l, c) => Transform::embed(lens(l), lens(c)),
            T::Merge(l, v3) => Transform::merge_variant(
                lens(l),
                if *v3 { MergeVariant::DivisionMod } else { MergeVariant::MagicDivision },
            ),
            T::Unmerge(l) => Transform::unmerge(lens(l)),
            T::Freeze(i) => Transform::freeze(i.0),
            T::Insert(l) => Transform::insert(l.0),
            T::Replicate(l) => Transform::replicate(lens(l)),
            T::Slice(a, b) => Transform::slice(a.0, b.0),
            T::Modulo(m, l) => Transform::modulo(m.0, l.0),
            T::Xor(a, b) => Transform::xor(a.0, b.0),
            T::Offset(l, o) => Transform::offset(l.0, o.0),
            T::Indexing(t) => Transform::indexing(lens(t)),
        };
        t.ok()
    }
}

/// A `transform_tensor_descriptor` step: transforms with lower positions (in the old top) and
/// upper labels (of the new top).
#[derive(Debug, Arbitrary)]
struct Step {
    transforms: Vec<(T, Vec<u8>, Vec<u8>)>,
    chain_flat: bool,
}

/// A coordinate: raw values folded into `[0, len)` per dim, the rank off by `rank_delta`.
#[derive(Debug, Arbitrary)]
struct Coord {
    raw: Vec<i64>,
    rank_delta: i8,
    moves: Vec<Vec<i64>>,
}

#[derive(Debug, Arbitrary)]
struct Sfc {
    lengths: Vec<Len>,
    order: Vec<u8>,
    scalars: Vec<Len>,
    snake: bool,
    at: Vec<Len>,
}

#[derive(Debug, Arbitrary)]
struct Spec {
    rs: Vec<Len>,
    hs: Vec<Vec<Len>>,
    ps: Vec<Vec<(i8, i8)>>,
    ys: Vec<(i8, i8)>,
    slice: Vec<(Len, Len)>,
    embed_inner: bool,
    reduce: Vec<u8>,
}

#[derive(Debug)]
struct Input {
    base: Base,
    steps: Vec<Step>,
    coords: Vec<Coord>,
    sfc: Option<Sfc>,
    spec: Option<Spec>,
}

impl<'a> Arbitrary<'a> for Input {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        Ok(Input {
            base: Base::arbitrary(u)?,
            steps: short_vec(u, 3)?,
            coords: short_vec(u, 4)?,
            sfc: Option::arbitrary(u)?,
            spec: Option::arbitrary(u)?,
        })
    }
}

fn base(b: &Base) -> Option<TensorDescriptor<i64>> {
    let d = match b {
        Base::Naive { lengths, strides, vector } => {
            TensorDescriptor::naive(lens(lengths), lens(strides), vector.map(|(a, b)| (a.0, b.0)))
        }
        Base::Packed { lengths, vector } => {
            TensorDescriptor::packed(lens(lengths), vector.map(|v| v.0))
        }
        Base::Aligned { lengths, align } => TensorDescriptor::aligned(lens(lengths), align.0),
        Base::WithOffset { lengths, strides, offset } => {
            TensorDescriptor::naive_with_offset(lens(lengths), lens(strides), offset.0)
        }
        Base::MortonTile { row_bits, col_bits } => {
            morton_tile(u32::from(*row_bits), u32::from(*col_bits))
        }
        Base::TiledMorton { height, width, tile } => TiledMorton::new(height.0, width.0, tile.0)
            .and_then(|t| {
                let _ = (t.tiles_h(), t.tiles_w(), t.storage_len());
                t.descriptor()
            }),
        Base::Hopper { which, rows, cols, elem_bytes } => {
            let s = [HopperSwizzle::B32, HopperSwizzle::B64, HopperSwizzle::B128]
                [usize::from(*which) % 3];
            s.descriptor(rows.0, cols.0, elem_bytes.0)
        }
        Base::XorLds { m, k, kpack, elem_bytes } => xor_lds(m.0, k.0, kpack.0, elem_bytes.0),
    };
    d.ok()
}

fn step(d: &TensorDescriptor<i64>, s: &Step) -> Option<TensorDescriptor<i64>> {
    let mut ts = Vec::new();
    let (mut lo, mut up) = (Vec::new(), Vec::new());
    for (t, l, u) in s.transforms.iter().take(6) {
        ts.push(t.build()?);
        lo.push(l.iter().take(8).map(|&x| usize::from(x)).collect());
        up.push(u.iter().take(8).map(|&x| usize::from(x)).collect());
    }
    let next = d.transform(ts, lo, up).ok()?;
    if s.chain_flat {
        // a 1-D view through an adaptor (chain): merge of all top lengths
        let flat = TensorAdaptor::single_stage(
            vec![Transform::merge(next.lengths()).ok()?],
            vec![(0..next.ndim()).collect()],
            vec![vec![0]],
        )
        .ok()?;
        return next.chain(&flat).ok();
    }
    Some(next)
}

/// Folds a raw value into `[0, len)` (0 for an empty dim). Coordinates stay in range: offsets
/// of in-range indices must not overflow once a descriptor is built, while out-of-range ones of a
/// descriptor at the i64 edges may (calculate_offset returns a plain i64).
fn fold(raw: i64, len: i64) -> i64 {
    if len <= 0 {
        return 0;
    }
    raw.rem_euclid(len)
}

fn exercise_descriptor(d: &TensorDescriptor<i64>, coords: &[Coord]) {
    let lengths = d.lengths();
    let _ = d.element_space_size();
    let _ = d.top_safe_vector_lengths_strides();
    let _ = d.adaptor().describe();
    for c in coords {
        let n = (lengths.len() as i64 + i64::from(c.rank_delta.clamp(-1, 1))).max(0) as usize;
        let top: Vec<i64> = (0..n)
            .map(|i| {
                let raw = c.raw.get(i).copied().unwrap_or(0);
                fold(raw, lengths.get(i).copied().unwrap_or(1))
            })
            .collect();
        if n != lengths.len() {
            // a coordinate of the wrong rank (an error where ranks are checked)
            let _ = d.calculate_offset(&top).settle();
            continue;
        }
        let Some(off) = d.calculate_offset(&top).settle() else { continue };
        let Some(mut coord) = Coordinate::new_descriptor(d, &top).settle() else { continue };
        assert_eq!(coord.offset(), off, "Coordinate::offset vs calculate_offset at {top:?}");
        let _ = d.is_valid(&coord).settle();
        let mut at = top.clone();
        for m in c.moves.iter().take(4) {
            // a step to another in-range index
            let step: Vec<i64> = (0..n)
                .map(|i| {
                    let to = fold(m.get(i).copied().unwrap_or(0), lengths[i]);
                    to - at[i]
                })
                .collect();
            // a rank error where moves are checked (the step always has the right rank)
            #[allow(clippy::unit_arg)]
            if d.move_coordinate(&mut coord, &step).settle().is_none() {
                break;
            }
            for (a, s) in at.iter_mut().zip(&step) {
                *a += s;
            }
            assert_eq!(coord.top(), at, "top after move");
            // moves are exact for every transform: same offset as a fresh coordinate
            assert_eq!(
                Some(coord.offset()),
                d.calculate_offset(&at).settle(),
                "offset after moving to {at:?} (descriptor {})",
                d.adaptor().describe()
            );
            let _ = d.is_valid_assuming_top_valid(&coord).settle();
        }
    }
}

fn exercise_sfc(s: &Sfc) {
    let Ok(c) = SpaceFillingCurve::new(
        lens(&s.lengths),
        s.order.iter().map(|&o| usize::from(o)).collect(),
        lens(&s.scalars),
        s.snake,
    ) else {
        return;
    };
    let n = c.num_access();
    let _ = (c.scalar_per_vector(), c.access_lengths(), c.ordered_access_lengths(), c.to_string());
    for i in s.at.iter().take(4) {
        let i = i.0;
        let _ = c.index(i);
        let _ = c.valid_extent(i);
        let _ = c.forward_step(i);
        let _ = c.backward_step(i);
        let _ = c.step_between(i, n.saturating_sub(1));
        if let Ok(idx) = c.index(i) {
            let _ = c.access_at(&idx);
        }
    }
    for a in c.accesses().take(16) {
        let _ = a.is_partial(&c);
    }
    let _ = c.accesses().next_back();
}

fn comps(v: &[(i8, i8)]) -> (Vec<i64>, Vec<i64>) {
    v.iter().map(|&(a, b)| (i64::from(a), i64::from(b))).unzip()
}

fn exercise_spec(s: &Spec) {
    let (ps_major, ps_minor): (Vec<Vec<i64>>, Vec<Vec<i64>>) =
        s.ps.iter().take(4).map(|p| comps(p)).unzip();
    let (ys_major, ys_minor) = comps(&s.ys);
    let spec = EncodingSpec {
        rs_lengths: lens(&s.rs),
        hs_lengthss: s.hs.iter().take(4).map(|h| lens(h)).collect(),
        ps_to_rhss_major: ps_major,
        ps_to_rhss_minor: ps_minor,
        ys_to_rhs_major: ys_major,
        ys_to_rhs_minor: ys_minor,
    };
    tilekit_fuzz::exercise_spec(&spec);
    let Ok(dist) = TileDistribution::from_spec(spec.clone()) else { return };
    let (np, ny) = (dist.p_lengths().len(), dist.y_lengths().len());
    let p: Vec<i64> = dist.p_lengths().iter().map(|&l| (l - 1).max(0)).collect();
    let y: Vec<i64> = dist.y_lengths().iter().map(|&l| (l - 1).max(0)).collect();
    assert_eq!((p.len(), y.len()), (np, ny));
    let _ = dist.calculate_x(&p, &y).settle();
    let _ = dist.calculate_index(&p).settle();
    let _ = dist.calculate_rs_index_from_ps_index(&p).settle();
    let _ = dist.ys_to_d(&y).settle();
    let _ = dist.d_to_ys((dist.thread_buffer_size() - 1).max(0)).settle();
    let (b, e): (Vec<i64>, Vec<i64>) = s.slice.iter().map(|(b, e)| (b.0, e.0)).unzip();
    if let Ok((sliced, _origin)) = dist.slice_x(&b, &e) {
        tilekit_fuzz::exercise_spec(sliced.encoding().spec());
    }
    let enc = dist.encoding();
    if s.embed_inner {
        if let Ok(e) = enc.embed(enc) {
            tilekit_fuzz::exercise_spec(e.spec());
        }
    }
    let xs: Vec<usize> = s.reduce.iter().take(4).map(|&x| usize::from(x)).collect();
    if let Ok(r) = enc.reduce(&xs) {
        tilekit_fuzz::exercise_spec(r.spec());
    }
}

fuzz_target!(|input: Input| {
    if let Some(mut d) = base(&input.base) {
        exercise_descriptor(&d, &input.coords);
        for s in &input.steps {
            match step(&d, s) {
                Some(next) => d = next,
                None => break,
            }
            exercise_descriptor(&d, &input.coords);
        }
    }
    if let Some(s) = &input.sfc {
        exercise_sfc(s);
    }
    if let Some(s) = &input.spec {
        exercise_spec(s);
    }
});
