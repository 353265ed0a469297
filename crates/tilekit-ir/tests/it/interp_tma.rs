//! TMA tensor copies in the interpreter: a load → compute → store round trip over a padded 2-D
//! tensor whose boxes hang over every edge (negative coordinates and past the end) gives what a
//! plain CPU reference computes, for every swizzle; each bug these copies make possible is
//! planted once and named; launch arguments and layouts that disagree with a map are named.

use tilekit_ir::interp::{run, Args, AsyncBug, HostBuffer, InterpError};
use tilekit_ir::lit;
use tilekit_ir::tma::{OobFill, TensorMapArg, TensorMapSpec, TmaSwizzle};
use tilekit_ir::{Axis, BinOp, CmpOp, IrError, Kernel, KernelBuilder, ScalarType, Val};
use tilekit_layout::{swizzle::HopperSwizzle, TensorDescriptor};

const POISON: u32 = 0x7fbf_dead; // a NaN no computation produces

#[derive(Clone, Copy, PartialEq, Debug)]
enum Bug {
    None,
    NoWait,
    TxTooSmall,
    TxTooLarge,
    NoProxyFence,
    OverwriteWhileStoring,
    NoWaitRead,
    LoadOverStore,
    NegativeStore,
    Misaligned,
}

/// How far below zero the boxes start (0: a tensor store's box may not start below zero —
/// the GPU traps; `a_tensor_store_below_zero_is_named` plants it).
const SX: i64 = 0;
const SY: i64 = 0;

/// The test's tensor: `w × h` f32, rows padded to `pitch` elements; boxes start at
/// `(0, 0)` and run past the far edges.
#[derive(Clone, Copy)]
struct Case {
    swizzle: TmaSwizzle,
    boxd: [u32; 2],
    w: u64,
    h: u64,
    pitch: u64,
    oob: OobFill,
}

impl Case {
    fn new(swizzle: TmaSwizzle) -> Case {
        let boxd = match swizzle {
            TmaSwizzle::None => [8, 8],
            TmaSwizzle::B32 => [8, 32],
            TmaSwizzle::B64 => [16, 16],
            TmaSwizzle::B128 => [32, 8],
        };
        Case { swizzle, boxd, w: 44, h: 37, pitch: 52, oob: OobFill::Zero }
    }
    fn spec(&self) -> TensorMapSpec {
        TensorMapSpec::new(ScalarType::F32, &self.boxd, self.swizzle, self.oob).unwrap()
    }
    fn grid(&self) -> [u32; 3] {
        let nb = |len: u64, shift: u64, b: u32| (len + shift).div_ceil(b as u64) as u32;
        [nb(self.w, SX as u64, self.boxd[0]), nb(self.h, SY as u64, self.boxd[1]), 1]
    }
    fn box_elems(&self) -> usize {
        (self.boxd[0] * self.boxd[1]) as usize
    }
    /// The shared tile's layout (rows × cols), the map's swizzle as a descriptor.
    fn layout(&self) -> TensorDescriptor<i64> {
        let (rows, cols) = (self.boxd[1] as i64, self.boxd[0] as i64);
        match self.swizzle.hopper() {
            Some(h) => h.descriptor(rows, cols, 4).unwrap(),
            None => TensorDescriptor::packed(vec![rows, cols], None).unwrap(),
        }
    }
    fn arg(&self) -> TensorMapArg {
        TensorMapArg::new(&[self.w, self.h], &[self.pitch * 4])
    }
}

/// Block (bx, by): thread 0 loads the box at `(bx·box0 − 4, by·box1 − 1)` of `x` with a tensor
/// copy; every thread reads the box in logical order through the tile's layout, writes it to
/// `z` (block-major, box-linear) and `2v + 1` into the output tile at the same swizzled place;
/// thread 0 stores the output tile to the same box of `y`.
fn round_trip(c: Case, bug: Bug) -> Kernel {
    let b = KernelBuilder::new("tma_round_trip", [64, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F32).unwrap();
    let y = b.ptr_param("y", ScalarType::F32).unwrap();
    let z = b.ptr_param("z", ScalarType::F32).unwrap();
    let xm = b.tensor_map_for_layout("xm", x, &c.boxd, &c.layout(), c.oob).unwrap();
    let ym = b.tensor_map_param("ym", y, c.spec()).unwrap();
    let n = c.box_elems();
    let inbuf = b.shared("in", ScalarType::F32, n + 32).unwrap();
    let outbuf = b.shared("out", ScalarType::F32, n).unwrap();
    let bar = b.mbarrier("full", 1).unwrap();
    let tid = b.thread_id(Axis::X);
    let first = b.cmp(CmpOp::Eq, &tid, &lit(0)).unwrap();
    let (bx, by) = (b.block_id(Axis::X), b.block_id(Axis::Y));
    let coords = [
        bx.clone() * lit(c.boxd[0] as i64) - lit(SX),
        by.clone() * lit(c.boxd[1] as i64) - lit(SY),
    ];
    b.if_then(&first, |b| {
        b.mbarrier_init(bar, &lit(0), &lit(1))?;
        b.fence_mbarrier_init();
        Ok(())
    })
    .unwrap();
    b.barrier();
    b.if_then(&first, |b| {
        let bytes = n as i64 * 4;
        let tx = match bug {
            Bug::TxTooSmall => bytes - 16,
            Bug::TxTooLarge => bytes + 16,
            _ => bytes,
        };
        b.mbarrier_arrive(bar, &lit(0), Some(&lit(tx)))?;
        // misaligned at run time (thread 0 computes 4), so the builder cannot see it
        let off = if bug == Bug::Misaligned { tid.clone() + lit(4) } else { lit(0) };
        b.tensor_load(inbuf, &off, xm, &coords, bar, &lit(0))
    })
    .unwrap();
    if bug != Bug::NoWait {
        b.mbarrier_wait(bar, &lit(0), &lit(0)).unwrap();
    }
    let layout = c.layout().lift::<Val>();
    let nblock = b.block_id(Axis::Y) * b.grid_dim(Axis::X) + b.block_id(Axis::X);
    let cols = c.boxd[0] as i64;
    b.for_range(&lit(0), &lit(n as i64 / 64), &lit(1), &[], |b, k, _| {
        let l = k * lit(64) + tid.clone();
        let s = layout.calculate_offset(&[l.clone() / lit(cols), l.clone() % lit(cols)])?;
        let v = b.load(inbuf, &s, 1, None)?.remove(0);
        b.store(z, &(nblock.clone() * lit(n as i64) + l), std::slice::from_ref(&v), None)?;
        let w = b.fma(&v, &b.f32(2.0), &b.f32(1.0))?;
        b.store(outbuf, &s, &[w], None)?;
        Ok(vec![])
    })
    .unwrap();
    if bug != Bug::NoProxyFence {
        b.fence_proxy_async();
    }
    b.barrier();
    b.if_then(&first, |b| {
        if bug == Bug::NegativeStore {
            // the box one column to the left: block 0's starts at column −1
            let left = [coords[0].clone() - lit(1), coords[1].clone()];
            b.tensor_store(ym, &left, outbuf, &lit(0))?;
        } else {
            b.tensor_store(ym, &coords, outbuf, &lit(0))?;
        }
        b.bulk_commit();
        if bug == Bug::OverwriteWhileStoring {
            b.store(outbuf, &lit(3), &[b.f32(0.0)], None)?;
        }
        if bug == Bug::LoadOverStore {
            // the next box into the tile the store is still reading
            b.mbarrier_arrive(bar, &lit(0), Some(&lit(n as i64 * 4)))?;
            b.tensor_load(outbuf, &lit(0), xm, &coords, bar, &lit(0))?;
            b.mbarrier_wait(bar, &lit(0), &lit(1))?;
        }
        if bug != Bug::NoWaitRead {
            b.bulk_wait(0, true);
        }
        Ok(())
    })
    .unwrap();
    b.finish().unwrap()
}

fn input(c: &Case) -> Vec<f32> {
    // random values, distinct from 0 and from the fill
    let mut s = 0x9e37_79b9_7f4a_7c15u64 ^ c.w;
    (0..c.pitch * c.h)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            ((s >> 40) as f32 / (1u64 << 24) as f32) * 4.0 + 0.25
        })
        .collect()
}

/// The CPU reference: (y, z) as bit patterns.
fn reference(c: &Case, x: &[f32]) -> (Vec<u32>, Vec<u32>) {
    let mut y = vec![POISON; x.len()];
    for r in 0..c.h {
        for col in 0..c.w {
            let i = (r * c.pitch + col) as usize;
            y[i] = (x[i] * 2.0 + 1.0).to_bits();
        }
    }
    let [gx, gy, _] = c.grid();
    let n = c.box_elems();
    let mut z = vec![POISON; (gx * gy) as usize * n];
    let fill = c.oob.bits(ScalarType::F32) as u32;
    for by in 0..gy as i64 {
        for bx in 0..gx as i64 {
            for l in 0..n as i64 {
                let col = bx * c.boxd[0] as i64 - SX + l % c.boxd[0] as i64;
                let row = by * c.boxd[1] as i64 - SY + l / c.boxd[0] as i64;
                let inside = (0..c.w as i64).contains(&col) && (0..c.h as i64).contains(&row);
                let v =
                    if inside { x[(row * c.pitch as i64 + col) as usize].to_bits() } else { fill };
                z[((by * gx as i64 + bx) * n as i64 + l) as usize] = v;
            }
        }
    }
    (y, z)
}

fn launch(c: Case, bug: Bug) -> (Result<(), InterpError>, Vec<u32>, Vec<u32>, Vec<f32>) {
    let k = round_trip(c, bug);
    let x = input(&c);
    let [gx, gy, _] = c.grid();
    let mut args = Args::new();
    args.buffer(HostBuffer::from_f32(&x))
        .buffer(HostBuffer::from_f32(&vec![f32::from_bits(POISON); x.len()]))
        .buffer(HostBuffer::from_f32(&vec![
            f32::from_bits(POISON);
            (gx * gy) as usize * c.box_elems()
        ]))
        .tensor_map(c.arg())
        .tensor_map(c.arg());
    let r = run(&k, c.grid(), &mut args).map(|_| ());
    let bits = |b: HostBuffer| b.to_f32().unwrap().iter().map(|v| v.to_bits()).collect();
    (r, bits(args.take_buffer(1).unwrap()), bits(args.take_buffer(2).unwrap()), x)
}

fn bug_of(r: Result<(), InterpError>) -> (AsyncBug, String) {
    match r {
        Err(InterpError::Async { kind, detail, .. }) => (kind, detail),
        other => panic!("expected an async bug, got {other:?}"),
    }
}

#[test]
fn a_round_trip_matches_the_cpu_reference_for_every_swizzle() {
    for sw in TmaSwizzle::ALL {
        let c = Case::new(sw);
        let (r, y, z, x) = launch(c, Bug::None);
        r.unwrap_or_else(|e| panic!("{sw:?}: {e}"));
        let (ry, rz) = reference(&c, &x);
        assert_eq!(y, ry, "{sw:?}: y");
        assert_eq!(z, rz, "{sw:?}: z");
        // the edges were exercised: some boxes were partly outside, nothing outside was stored
        assert!(rz.iter().filter(|&&v| v == 0).count() > 0);
        assert!(y.iter().filter(|&&v| v == POISON).count() as u64 == (c.pitch - c.w) * c.h);
    }
}

#[test]
fn the_swizzled_image_is_the_hardware_pattern() {
    // read the raw shared image back (not through the layout): chunk c of row r of a 128-byte
    // swizzle holds logical chunk c ⊕ (r mod 8)
    let spec =
        TensorMapSpec::new(ScalarType::F32, &[32, 8], TmaSwizzle::B128, OobFill::Zero).unwrap();
    for l in 0..spec.box_elems() {
        let (row, col) = (l / 32, l % 32);
        let (chunk, within) = (col / 4, col % 4);
        assert_eq!(spec.smem_element(l), row * 32 + ((chunk ^ (row % 8)) * 4) + within);
    }
    let s64 =
        TensorMapSpec::new(ScalarType::F16, &[32, 16], TmaSwizzle::B64, OobFill::Zero).unwrap();
    // 64-byte rows: two rows per 128-byte line, chunk bits 4–5 ⊕= address bits 7–8
    for l in 0..s64.box_elems() {
        let byte = l * 2;
        let want = byte ^ (((byte >> 7) & 3) << 4);
        assert_eq!(s64.smem_element(l) * 2, want);
    }
}

#[test]
fn nan_fill_marks_the_elements_outside() {
    let mut c = Case::new(TmaSwizzle::B32);
    c.oob = OobFill::Nan;
    let (r, y, z, x) = launch(c, Bug::None);
    r.unwrap();
    let (ry, rz) = reference(&c, &x);
    assert_eq!((y, &z), (ry, &rz));
    assert!(z.iter().any(|&v| f32::from_bits(v).is_nan() && v != POISON));
}

#[test]
fn reading_before_the_tensor_copy_lands_is_named() {
    let (kind, detail) = bug_of(launch(Case::new(TmaSwizzle::B128), Bug::NoWait).0);
    assert_eq!(kind, AsyncBug::ReadBeforeComplete);
    assert!(detail.contains("cp.async.bulk.tensor.2d.shared.global"), "{detail}");
}

#[test]
fn expect_tx_that_differs_from_the_box_bytes_is_named() {
    for bug in [Bug::TxTooSmall, Bug::TxTooLarge] {
        let (kind, detail) = bug_of(launch(Case::new(TmaSwizzle::None), bug).0);
        assert_eq!(kind, AsyncBug::TxMismatch, "{bug:?}: {detail}");
        assert!(detail.contains("16"), "{bug:?}: {detail}");
    }
}

#[test]
fn storing_unfenced_writes_is_named() {
    let (kind, detail) = bug_of(launch(Case::new(TmaSwizzle::B64), Bug::NoProxyFence).0);
    assert_eq!(kind, AsyncBug::MissingProxyFence);
    assert!(detail.contains("fence.proxy.async never ran"), "{detail}");
}

#[test]
fn overwriting_what_a_tensor_store_reads_is_named() {
    let (kind, _) = bug_of(launch(Case::new(TmaSwizzle::None), Bug::OverwriteWhileStoring).0);
    assert_eq!(kind, AsyncBug::OverwriteWhileStoreReads);
    let (kind, _) = bug_of(launch(Case::new(TmaSwizzle::None), Bug::NoWaitRead).0);
    assert_eq!(kind, AsyncBug::StoreReadAtExit);
    let (kind, detail) = bug_of(launch(Case::new(TmaSwizzle::B32), Bug::LoadOverStore).0);
    assert_eq!(kind, AsyncBug::OverwriteWhileStoreReads);
    assert!(detail.contains("bulk group 0 may still be reading it"), "{detail}");
}

#[test]
fn a_misaligned_shared_tile_is_named() {
    let (kind, detail) = bug_of(launch(Case::new(TmaSwizzle::B128), Bug::Misaligned).0);
    assert_eq!(kind, AsyncBug::BadBulkCopy);
    assert!(detail.contains("multiple of 1024"), "{detail}");
}

#[test]
fn a_constant_misaligned_or_oversized_tile_is_refused_by_the_builder() {
    let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F32).unwrap();
    let spec =
        TensorMapSpec::new(ScalarType::F32, &[16, 16], TmaSwizzle::B64, OobFill::Zero).unwrap();
    let m = b.tensor_map_param("xm", x, spec).unwrap();
    let s = b.shared("s", ScalarType::F32, 512).unwrap();
    let bar = b.mbarrier("bar", 1).unwrap();
    let e = b.tensor_load(s, &lit(64), m, &[lit(0), lit(0)], bar, &lit(0)).unwrap_err();
    assert!(
        e.to_string().contains("shared byte offset = 256 is invalid: a multiple of 512"),
        "{e}"
    );
    let e = b.tensor_store(m, &[lit(0), lit(0)], s, &lit(384)).unwrap_err();
    assert!(e.to_string().contains("384..640 of an allocation of 512"), "{e}");
    b.tensor_load(s, &lit(128), m, &[lit(0), lit(0)], bar, &lit(0)).unwrap();
}

#[test]
fn a_map_argument_the_driver_would_refuse_is_named() {
    let c = Case::new(TmaSwizzle::None);
    let k = round_trip(c, Bug::None);
    let x = input(&c);
    let bad = [
        (TensorMapArg::new(&[c.w, c.h], &[c.pitch * 4 + 4]), "byte stride of dim 1 = 212"),
        (TensorMapArg::new(&[c.w, c.h + 1], &[c.pitch * 4]), "covers"),
        (TensorMapArg::new(&[c.w], &[]), "rank"),
    ];
    for (arg, want) in bad {
        let mut args = Args::new();
        args.buffer(HostBuffer::from_f32(&x))
            .buffer(HostBuffer::from_f32(&x))
            .buffer(HostBuffer::from_f32(&vec![0.0; 4096]))
            .tensor_map(arg)
            .tensor_map(c.arg());
        let e = run(&k, c.grid(), &mut args).unwrap_err();
        assert!(matches!(e, InterpError::TensorMap { index: 3, .. }), "{e}");
        assert!(e.to_string().contains(want), "{e}");
    }
}

#[test]
fn a_map_that_disagrees_with_its_layout_is_named() {
    let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F16).unwrap();
    // a 64-byte-swizzled tile for a box whose rows are 128 bytes
    let tile = HopperSwizzle::B64.descriptor(16, 32, 2).unwrap();
    let e = b.tensor_map_for_layout("xm", x, &[64, 8], &tile, OobFill::Zero).unwrap_err();
    assert!(matches!(e, IrError::TensorMapLayout { ref map, .. } if map == "xm"), "{e}");
    // the same lengths, but a padded (not swizzled) tile
    let padded = TensorDescriptor::naive(vec![8i64, 64], vec![72, 1], None).unwrap();
    let e = b.tensor_map_for_layout("xm", x, &[64, 8], &padded, OobFill::Zero).unwrap_err();
    assert!(e.to_string().contains("box element [1, 0] is at element 72"), "{e}");
    let spec =
        TensorMapSpec::new(ScalarType::F16, &[64, 8], TmaSwizzle::B64, OobFill::Zero).unwrap_err();
    assert!(spec.to_string().contains("exactly one swizzle row: 64 bytes"), "{spec}");
}

#[test]
fn builder_rules_are_named() {
    let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F32).unwrap();
    let e =
        TensorMapSpec::new(ScalarType::F32, &[4, 1, 1, 1, 1, 1], TmaSwizzle::None, OobFill::Zero)
            .unwrap_err();
    assert!(e.to_string().contains("rank (box dims) = 6"), "{e}");
    let e = TensorMapSpec::new(ScalarType::F32, &[4, 257], TmaSwizzle::None, OobFill::Zero)
        .unwrap_err();
    assert!(e.to_string().contains("box dim 1 = 257"), "{e}");
    let spec =
        TensorMapSpec::new(ScalarType::F32, &[4, 4], TmaSwizzle::None, OobFill::Zero).unwrap();
    let m = b.tensor_map_param("xm", x, spec).unwrap();
    let s = b.shared("s", ScalarType::F32, 16).unwrap();
    let bar = b.mbarrier("bar", 1).unwrap();
    let e = b.tensor_load(s, &lit(0), m, &[lit(0)], bar, &lit(0)).unwrap_err();
    assert!(e.to_string().contains("coordinates = 1 of them"), "{e}");
    let h = b.shared("h", ScalarType::F16, 16).unwrap();
    assert!(b.tensor_store(m, &[lit(0), lit(0)], h, &lit(0)).is_err());
    let e = b.tensor_load_multicast(s, &lit(0), m, &[lit(0), lit(0)], bar, &lit(0), &lit(1));
    assert!(e.unwrap_err().to_string().contains("cluster"));
}

#[test]
fn prefetch_is_validated_and_changes_nothing() {
    let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F32).unwrap();
    let spec = TensorMapSpec::new(ScalarType::F32, &[8], TmaSwizzle::None, OobFill::Zero).unwrap();
    let m = b.tensor_map_param("xm", x, spec).unwrap();
    let t = b.thread_id(Axis::X);
    b.tensor_prefetch(m, &[b.binary(BinOp::Mul, &t, &lit(8)).unwrap()]).unwrap();
    let k = b.finish().unwrap();
    let x: Vec<f32> = (0..64).map(|i| i as f32 * 0.5 + 1.0).collect();
    let mut args = Args::new();
    args.buffer(HostBuffer::from_f32(&x)).tensor_map(TensorMapArg::packed(&[64], 4));
    run(&k, [1, 1, 1], &mut args).unwrap();
    assert_eq!(args.take_buffer(0).unwrap().to_f32().unwrap(), x);
}

#[test]
fn multicast_tensor_loads_reach_every_block_of_the_mask() {
    let b = KernelBuilder::new("mc", [32, 1, 1]).unwrap();
    b.set_cluster_dim([2, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F32).unwrap();
    let y = b.ptr_param("y", ScalarType::F32).unwrap();
    let spec =
        TensorMapSpec::new(ScalarType::F32, &[8, 4], TmaSwizzle::None, OobFill::Zero).unwrap();
    let m = b.tensor_map_param("xm", x, spec).unwrap();
    let s = b.shared("s", ScalarType::F32, 32).unwrap();
    let bar = b.mbarrier("bar", 1).unwrap();
    let tid = b.thread_id(Axis::X);
    let rank = b.cluster_cta_rank();
    let first = b.cmp(CmpOp::Eq, &tid, &lit(0)).unwrap();
    b.if_then(&first, |b| {
        b.mbarrier_init(bar, &lit(0), &lit(1))?;
        b.fence_mbarrier_init();
        b.mbarrier_arrive(bar, &lit(0), Some(&lit(128)))
    })
    .unwrap();
    b.cluster_barrier().unwrap();
    let issue = b.cmp(CmpOp::Eq, &(tid.clone() + rank.clone() * lit(32)), &lit(0)).unwrap();
    b.if_then(&issue, |b| {
        b.tensor_load_multicast(s, &lit(0), m, &[lit(4), lit(1)], bar, &lit(0), &lit(3))
    })
    .unwrap();
    b.mbarrier_wait(bar, &lit(0), &lit(0)).unwrap();
    let v = b.load(s, &tid, 1, None).unwrap();
    b.store(y, &(b.block_id(Axis::X) * lit(32) + tid.clone()), &v, None).unwrap();
    b.cluster_barrier().unwrap();
    let k = b.finish().unwrap();
    let x: Vec<f32> = (0..12 * 6).map(|i| i as f32 + 0.5).collect();
    let mut args = Args::new();
    args.buffer(HostBuffer::from_f32(&x))
        .buffer(HostBuffer::from_f32(&[f32::NAN; 64]))
        .tensor_map(TensorMapArg::packed(&[12, 6], 4));
    run(&k, [2, 1, 1], &mut args).unwrap();
    let y = args.take_buffer(1).unwrap().to_f32().unwrap();
    for blk in 0..2 {
        for l in 0..32usize {
            let (col, row) = (4 + l % 8, 1 + l / 8);
            let want = if col < 12 { x[row * 12 + col] } else { 0.0 };
            assert_eq!(y[blk * 32 + l], want, "block {blk} element {l}");
        }
    }
}

#[test]
fn a_tensor_store_below_zero_is_named() {
    // the GPU traps (CUDA_ERROR_ILLEGAL_INSTRUCTION, H100) on a tensor store whose box starts
    // below zero; the interpreter names it before anything is written
    let (kind, detail) = bug_of(launch(Case::new(TmaSwizzle::None), Bug::NegativeStore).0);
    assert_eq!(kind, AsyncBug::NegativeStoreCoordinate, "{detail}");
    assert!(detail.contains("coordinate 0 of the box is -1"), "{detail}");
}
