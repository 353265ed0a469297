//! TMA round trips: one coverage kernel per swizzle mode (rank 2) and per rank (1–5), each
//! over a tensor with padded strides whose last boxes hang over its far edges.
//!
//! ```text
//!   block b = one box, at (b_i · box_i − shift_i)_i   (shift = 0: boxes start at the tensor's
//!                                                      first element and the last ones end past
//!                                                      it — a tensor *store* starting below zero
//!                                                      traps on the GPU, measured on an H100)
//!   thread 0   mbarrier init · fence.mbarrier_init        then a block barrier
//!   thread 0   arrive.expect_tx(box bytes) · tensor_load(in, xmap, coords)
//!   all        wait · for each box element l (logical order, read through the tile's layout —
//!              the HopperSwizzle descriptor the map was derived from):
//!                 z[b · box + l] = in[layout(l)]          (the image: fill where outside)
//!                 out[layout(l)] = 2 · in[layout(l)] + 1
//!              fence.proxy.async · barrier
//!   thread 0   tensor_store(ymap, coords, out) · commit · wait_group.read 0
//!
//!   y = 2x + 1 on the tensor, untouched (poison) in the padding; z = every box as loaded
//! ```

use tilekit_ir::interp::{Args, HostBuffer};
use tilekit_ir::tma::{OobFill, TensorMapArg, TensorMapSpec, TmaSwizzle};
use tilekit_ir::{lit, Axis, CmpOp, IrError, Kernel, KernelBuilder, ScalarType, Val};
use tilekit_layout::TensorDescriptor;

/// The bits outputs are poisoned with (a NaN no computation produces).
///
/// ```
/// assert!(f32::from_bits(tilekit_ptx::coverage::tma::POISON).is_nan());
/// ```
pub const POISON: u32 = 0x7fbf_dead;

/// Threads per block of the round-trip kernels.
const THREADS: i64 = 128;

/// One round-trip case: a rank-`box_dims.len()` f32 tensor (`dims`, byte `strides` of dims
/// 1.., innermost first), a box, a swizzle, and how far boxes start before the tensor.
///
/// ```
/// let cases = tilekit_ptx::coverage::tma::cases();
/// assert_eq!(cases.len(), 8);
/// assert!(cases.iter().any(|c| c.name == "tma_sw128"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TmaCase {
    /// Kernel name (also the `tilekit ptx` name).
    pub name: String,
    /// The map's swizzle.
    pub swizzle: TmaSwizzle,
    /// Box, innermost first.
    pub box_dims: Vec<u32>,
    /// Tensor dims, innermost first.
    pub dims: Vec<u64>,
    /// Byte strides of dims 1.. (padded: larger than packed).
    pub strides: Vec<u64>,
    /// Boxes start this many elements before the tensor, per dim.
    pub shift: Vec<i64>,
}

/// The round-trip cases: every swizzle at rank 2, and ranks 1, 3, 4, 5.
///
/// ```
/// let c = &tilekit_ptx::coverage::tma::cases()[0];
/// assert_eq!((c.name.as_str(), c.box_dims.len()), ("tma_none", 2));
/// ```
pub fn cases() -> Vec<TmaCase> {
    let case = |name: &str, swizzle, box_dims: &[u32], dims: &[u64], strides: &[u64]| {
        // boxes start at 0 and run past the far edges (zero fill, clipped stores): a tensor store
        // starting below zero traps on the GPU (AsyncBug::NegativeStoreCoordinate)
        let shift = (0..box_dims.len()).map(|_| 0).collect();
        TmaCase {
            name: name.into(),
            swizzle,
            box_dims: box_dims.to_vec(),
            dims: dims.to_vec(),
            strides: strides.to_vec(),
            shift,
        }
    };
    vec![
        case("tma_none", TmaSwizzle::None, &[8, 16], &[36, 21], &[160]),
        case("tma_sw32", TmaSwizzle::B32, &[8, 32], &[28, 45], &[128]),
        case("tma_sw64", TmaSwizzle::B64, &[16, 16], &[52, 19], &[224]),
        case("tma_sw128", TmaSwizzle::B128, &[32, 8], &[76, 13], &[320]),
        case("tma_rank1", TmaSwizzle::None, &[64], &[150], &[]),
        case("tma_rank3", TmaSwizzle::B128, &[32, 4, 2], &[40, 5, 3], &[176, 1056]),
        case("tma_rank4", TmaSwizzle::None, &[8, 2, 3, 2], &[12, 3, 4, 3], &[64, 192, 768]),
        case(
            "tma_rank5",
            TmaSwizzle::None,
            &[4, 2, 2, 3, 2],
            &[6, 3, 3, 4, 3],
            &[32, 96, 288, 1152],
        ),
    ]
}

/// The case named `name`.
///
/// ```
/// assert!(tilekit_ptx::coverage::tma::case("tma_rank4").is_some());
/// assert!(tilekit_ptx::coverage::tma::case("tma_rank9").is_none());
/// ```
pub fn case(name: &str) -> Option<TmaCase> {
    cases().into_iter().find(|c| c.name == name)
}

impl TmaCase {
    /// The map's spec (f32, zero fill).
    ///
    /// ```
    /// let c = tilekit_ptx::coverage::tma::case("tma_sw64").unwrap();
    /// assert_eq!(c.spec().unwrap().box_bytes(), 16 * 16 * 4);
    /// ```
    pub fn spec(&self) -> Result<TensorMapSpec, IrError> {
        TensorMapSpec::new(ScalarType::F32, &self.box_dims, self.swizzle, OobFill::Zero)
    }

    /// Elements of one box.
    ///
    /// ```
    /// assert_eq!(tilekit_ptx::coverage::tma::case("tma_rank5").unwrap().box_elems(), 96);
    /// ```
    pub fn box_elems(&self) -> usize {
        self.box_dims.iter().map(|&d| d as usize).product()
    }

    /// Boxes along each dim (enough to cover the tensor from `−shift`).
    ///
    /// ```
    /// assert_eq!(tilekit_ptx::coverage::tma::case("tma_none").unwrap().boxes(), vec![5, 2]);
    /// ```
    pub fn boxes(&self) -> Vec<u64> {
        self.dims
            .iter()
            .zip(&self.box_dims)
            .zip(&self.shift)
            .map(|((&d, &b), &s)| (d + s as u64).div_ceil(b as u64))
            .collect()
    }

    /// One block per box.
    ///
    /// ```
    /// assert_eq!(tilekit_ptx::coverage::tma::case("tma_none").unwrap().grid(), [10, 1, 1]);
    /// ```
    pub fn grid(&self) -> [u32; 3] {
        [self.boxes().iter().product::<u64>() as u32, 1, 1]
    }

    /// The tensor-map argument.
    ///
    /// ```
    /// let a = tilekit_ptx::coverage::tma::case("tma_none").unwrap().map_arg();
    /// assert_eq!(a.byte_strides(), &[160]);
    /// ```
    pub fn map_arg(&self) -> TensorMapArg {
        TensorMapArg::new(&self.dims, &self.strides)
    }

    /// Elements of `x` and `y`: the tensor's extent, padding included, and the rest of the
    /// 16-byte chunk that ends its last row (a tensor store writes that chunk whole).
    ///
    /// ```
    /// assert_eq!(tilekit_ptx::coverage::tma::case("tma_rank1").unwrap().len(), 152);
    /// assert_eq!(tilekit_ptx::coverage::tma::case("tma_rank5").unwrap().len(), 864);
    /// ```
    pub fn len(&self) -> usize {
        self.map_arg().extent(4) as usize + (self.dim0_written() - self.dims[0]) as usize
    }

    /// Columns (dim 0) a tensor store writes: the tensor's, rounded up to whole 16-byte chunks
    /// (the GPU's clipping granularity; the interpreter models it).
    ///
    /// ```
    /// assert_eq!(tilekit_ptx::coverage::tma::case("tma_rank5").unwrap().dim0_written(), 8);
    /// ```
    pub fn dim0_written(&self) -> u64 {
        (self.dims[0] * 4).div_ceil(16) * 16 / 4
    }

    /// Never: every case has elements.
    ///
    /// ```
    /// assert!(!tilekit_ptx::coverage::tma::case("tma_rank1").unwrap().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The shared tile's layout as a 2-D descriptor (rows = the outer box dims, cols = the
    /// innermost): the Hopper swizzle descriptor, or packed.
    fn layout(&self) -> Result<TensorDescriptor<i64>, IrError> {
        let cols = self.box_dims[0] as i64;
        let rows = self.box_elems() as i64 / cols;
        Ok(match self.swizzle.hopper() {
            Some(h) => h.descriptor(rows, cols, 4)?,
            None => TensorDescriptor::packed(vec![rows, cols], None)?,
        })
    }

    /// The round-trip kernel (see the [module docs](self)). Params `x`, `y`, `z` (f32) and
    /// the maps `xmap` (over `x`, derived from the tile's layout) and `ymap` (over `y`).
    ///
    /// ```
    /// let k = tilekit_ptx::coverage::tma::case("tma_sw128").unwrap().kernel().unwrap();
    /// let text = k.to_string();
    /// assert!(text.contains("cp.async.bulk.tensor.2d.shared.global"));
    /// assert!(text.contains("swizzle 128B"));
    /// ```
    pub fn kernel(&self) -> Result<Kernel, IrError> {
        let n = self.box_elems() as i64;
        let b = KernelBuilder::new(&self.name, [THREADS as u32, 1, 1])?;
        let x = b.ptr_param("x", ScalarType::F32)?;
        let y = b.ptr_param("y", ScalarType::F32)?;
        let z = b.ptr_param("z", ScalarType::F32)?;
        let layout = self.layout()?;
        let xmap = b.tensor_map_for_layout("xmap", x, &self.box_dims, &layout, OobFill::Zero)?;
        let ymap = b.tensor_map_param("ymap", y, self.spec()?)?;
        let inbuf = b.shared("in", ScalarType::F32, n as usize)?;
        let outbuf = b.shared("out", ScalarType::F32, n as usize)?;
        let bar = b.mbarrier("full", 1)?;
        let tid = b.thread_id(Axis::X);
        let first = b.cmp(CmpOp::Eq, &tid, &lit(0))?;
        let blk = b.block_id(Axis::X);
        let mut coords = Vec::new();
        let mut below = 1i64;
        for ((&bd, &nb), &s) in self.box_dims.iter().zip(&self.boxes()).zip(&self.shift) {
            let bi = (blk.clone() / lit(below)) % lit(nb as i64);
            coords.push(bi * lit(bd as i64) - lit(s));
            below *= nb as i64;
        }
        b.note("tma round trip: thread 0 loads the block's box");
        b.if_then(&first, |b| {
            b.mbarrier_init(bar, &lit(0), &lit(1))?;
            b.fence_mbarrier_init();
            Ok(())
        })?;
        b.barrier(); // the barrier is initialised before anyone waits on it
        b.if_then(&first, |b| {
            b.mbarrier_arrive(bar, &lit(0), Some(&lit(n * 4)))?;
            b.tensor_load(inbuf, &lit(0), xmap, &coords, bar, &lit(0))
        })?;
        b.mbarrier_wait(bar, &lit(0), &lit(0))?;
        b.note("tma round trip: read the box through the tile's layout");
        let tile = layout.lift::<Val>();
        let cols = self.box_dims[0] as i64;
        let iters = (n + THREADS - 1) / THREADS;
        b.for_range(&lit(0), &lit(iters), &lit(1), &[], |b, k, _| {
            let l = k * lit(THREADS) + tid.clone();
            let inside = b.cmp(CmpOp::Lt, &l, &lit(n))?;
            b.if_then(&inside, |b| {
                let s = tile.calculate_offset(&[l.clone() / lit(cols), l.clone() % lit(cols)])?;
                let v = b.load(inbuf, &s, 1, None)?.remove(0);
                b.store(z, &(blk.clone() * lit(n) + l.clone()), std::slice::from_ref(&v), None)?;
                let w = b.fma(&v, &b.f32(2.0), &b.f32(1.0))?;
                b.store(outbuf, &s, &[w], None)
            })?;
            Ok(vec![])
        })?;
        b.fence_proxy_async();
        b.barrier();
        b.note("tma round trip: thread 0 stores the box back (clipped at the tensor's edges)");
        b.if_then(&first, |b| {
            b.tensor_store(ymap, &coords, outbuf, &lit(0))?;
            b.bulk_commit();
            b.bulk_wait(0, true);
            Ok(())
        })?;
        b.finish()
    }

    /// Launch arguments around input `x` (`len()` elements): `x`, `y` and `z` poisoned, the
    /// two maps.
    ///
    /// ```
    /// let c = tilekit_ptx::coverage::tma::case("tma_rank1").unwrap();
    /// let a = c.args(&vec![1.0; c.len()]);
    /// assert_eq!(a.len(), 5);
    /// ```
    pub fn args(&self, x: &[f32]) -> Args {
        let poison = |n: usize| HostBuffer::from_f32(&vec![f32::from_bits(POISON); n]);
        let mut a = Args::new();
        a.buffer(HostBuffer::from_f32(x))
            .buffer(poison(x.len()))
            .buffer(poison(self.grid()[0] as usize * self.box_elems()))
            .tensor_map(self.map_arg())
            .tensor_map(self.map_arg());
        a
    }

    /// The CPU reference: `(y, z)` as bit patterns for input `x` (see the [module docs](self)).
    ///
    /// ```
    /// let c = tilekit_ptx::coverage::tma::case("tma_rank1").unwrap();
    /// let x: Vec<f32> = (0..c.len()).map(|i| i as f32).collect();
    /// let (y, z) = c.reference(&x);
    /// assert_eq!(f32::from_bits(y[3]), 7.0);
    /// assert_eq!(f32::from_bits(z[4]), 4.0); // box 0 starts at the tensor's first element
    /// assert_eq!(z[150], 0); // box 2 (128..192) is filled past the tensor's 150
    /// ```
    pub fn reference(&self, x: &[f32]) -> (Vec<u32>, Vec<u32>) {
        let arg = self.map_arg();
        let r = self.dims.len();
        let mut y = vec![POISON; x.len()];
        let boxes = self.boxes();
        // dim 0 as the stores write it: whole 16-byte chunks, as far as the boxes reach; the
        // columns past the tensor hold the loads' zero fill, so 2·0 + 1
        let mut written = self.dims.clone();
        written[0] = self.dim0_written().min(boxes[0] * self.box_dims[0] as u64);
        let total: u64 = written.iter().product();
        for lin in 0..total {
            let mut rest = lin;
            let c: Vec<u64> = written
                .iter()
                .map(|&d| {
                    let v = rest % d;
                    rest /= d;
                    v
                })
                .collect();
            let e = arg.element(&c, 4) as usize;
            let v = if c[0] < self.dims[0] { x[e] } else { 0.0 };
            y[e] = (v * 2.0 + 1.0).to_bits();
        }
        let n = self.box_elems();
        let mut z = vec![POISON; self.grid()[0] as usize * n];
        for blk in 0..self.grid()[0] as usize {
            let mut below = 1usize;
            let origin: Vec<i64> = (0..r)
                .map(|i| {
                    let bi = (blk / below) % boxes[i] as usize;
                    below *= boxes[i] as usize;
                    bi as i64 * self.box_dims[i] as i64 - self.shift[i]
                })
                .collect();
            for l in 0..n {
                let mut rest = l;
                let mut inside = true;
                let mut g = Vec::with_capacity(r);
                for ((&o, &bd), &d) in origin.iter().zip(&self.box_dims).zip(&self.dims) {
                    let c = o + (rest % bd as usize) as i64;
                    rest /= bd as usize;
                    inside &= c >= 0 && c < d as i64;
                    g.push(c.max(0) as u64);
                }
                z[blk * n + l] = if inside { x[arg.element(&g, 4) as usize].to_bits() } else { 0 };
            }
        }
        (y, z)
    }
}
