//! Every op the builder accepts, on every type, emitted for every target and — where `ptxas` is
//! available (`TILEKIT_PTXAS=/path/to/ptxas`, or `ptxas` on the PATH) — assembled. Without one,
//! `ptxas_assembled_the_kernels_of_this_file` is reported as ignored (docs/testing.md); CI sets
//! `TILEKIT_REQUIRE_PTXAS=1` so that a missing assembler fails.

use std::path::PathBuf;
use std::process::Command;

use tilekit_ir::{examples, Kernel, KernelBuilder, ScalarType};
use tilekit_layout::Idx;
use tilekit_ptx::coverage::{every_op, TYPES};
use tilekit_ptx::{emit_kernel, Target};

fn ptxas() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("TILEKIT_PTXAS") {
        return Some(PathBuf::from(p));
    }
    let found = Command::new("ptxas").arg("--version").output().is_ok_and(|o| o.status.success());
    if found {
        return Some(PathBuf::from("ptxas"));
    }
    assert!(
        std::env::var_os("TILEKIT_REQUIRE_PTXAS").is_none(),
        "TILEKIT_REQUIRE_PTXAS is set but no ptxas was found"
    );
    None
}

/// Emits for every target and assembles with ptxas when present; returns the sm_90a PTX.
fn check(k: &Kernel) -> String {
    let tmp = tempfile::Builder::new().prefix("tk-ptx-").tempdir().unwrap();
    let dir = tmp.path();
    let mut sm90a = String::new();
    for t in Target::ALL {
        if t == Target::Sm80 && (k.cluster_size() > 1 || k.to_string().contains("mbarrier")) {
            let e = emit_kernel(k, t).unwrap_err().to_string();
            assert!(e.contains("need sm_90"), "{}: {e}", k.name);
            continue;
        }
        let ptx = emit_kernel(k, t).unwrap_or_else(|e| panic!("{}: {e}", k.name));
        assert!(ptx.is_ascii(), "{}: PTX must be ASCII", k.name);
        if let Some(ptxas) = ptxas() {
            let path = dir.join(format!("{}_{}.ptx", k.name, t.name()));
            std::fs::write(&path, &ptx).unwrap();
            let out = Command::new(&ptxas)
                .arg(format!("-arch={}", t.name()))
                .arg(&path)
                .arg("-o")
                .arg(dir.join(format!("{}_{}.cubin", k.name, t.name())))
                .output()
                .expect("ptxas runs");
            assert!(
                out.status.success(),
                "ptxas -arch={} rejected {}:\n{}\n--- PTX ---\n{}",
                t.name(),
                k.name,
                String::from_utf8_lossy(&out.stderr),
                ptx
            );
        }
        if t == Target::Sm90a {
            sm90a = ptx;
        }
    }
    sm90a
}

#[test]
fn every_op_on_every_type_assembles() {
    for t in TYPES {
        let ptx = check(&every_op(t, true).unwrap());
        assert!(ptx.contains("bar.sync 0;"));
        assert_eq!(ptx.contains("shfl.sync.bfly.b32"), t.size_bytes() == 4, "{}", t.name());
        assert!(ptx.contains("vote.sync.ballot.b32"));
        // 16-bit types: the packed pair ops, one instruction per two elements, NaN-propagating
        let pairs = [format!("max.NaN.{}x2", t.name()), format!("min.NaN.{}x2", t.name())];
        for p in &pairs {
            assert_eq!(ptx.contains(p.as_str()), t.size_bytes() == 2, "{}: {p}", t.name());
        }
        // the masked load with a fill writes the fill before the predicated load
        let fill = ptx.find("ld.global").map(|i| &ptx[..i]).unwrap_or("");
        assert!(!fill.is_empty(), "{}", t.name());
        // the programmatic-launch pair: the wait before the first global load, the trigger
        // after the last one and before the first global store
        let (wait, trigger) =
            (ptx.find("griddepcontrol.wait;"), ptx.find("griddepcontrol.launch_dependents;"));
        let (wait, trigger) = (wait.expect("wait emitted"), trigger.expect("trigger emitted"));
        let first_load = ptx.find("ld.global").unwrap();
        let last_load = ptx.rfind("ld.global").unwrap();
        let first_store = ptx.find("st.global").unwrap();
        assert!(wait < first_load && last_load < trigger && trigger < first_store, "{ptx}");
        assert!(every_op(t, true).unwrap().waits_on_prior_grid());
    }
}

/// Float max and min propagate NaN on the GPU as in the interpreter (torch.maximum): the `.NaN`
/// forms for f32 (16-bit scalars widen to f32) and the packed pairs, a NaN test and select for
/// f64 (which has no `.NaN` form); integer max and min stay plain.
#[test]
fn float_max_and_min_use_the_nan_forms() {
    use tilekit_ir::BinOp;
    for t in [ScalarType::F32, ScalarType::F16, ScalarType::BF16, ScalarType::F64, ScalarType::I32]
    {
        let b = KernelBuilder::new(&format!("maxmin_{}", t.name()), [32, 1, 1]).unwrap();
        let x = b.ptr_param("x", t).unwrap();
        let v = b.load(x, &Idx::lit(0), 2, None).unwrap();
        let hi = b.binary(BinOp::Max, &v[0], &v[1]).unwrap();
        let lo = b.binary(BinOp::Min, &v[0], &v[1]).unwrap();
        b.store(x, &Idx::lit(2), &[hi, lo], None).unwrap();
        let ptx = check(&b.finish().unwrap());
        let plain = |op: &str, ty: &str| ptx.contains(&format!("\t{op}.{ty} "));
        match t {
            ScalarType::F32 | ScalarType::F16 | ScalarType::BF16 => {
                for op in ["max", "min"] {
                    assert!(ptx.contains(&format!("\t{op}.NaN.f32 ")), "{t}: {ptx}");
                    assert!(!plain(op, "f32"), "{t}: {ptx}");
                }
            }
            ScalarType::F64 => {
                assert_eq!(ptx.matches("setp.nan.f64").count(), 2, "{ptx}");
                assert_eq!(ptx.matches("0d7FFFFFFFFFFFFFFF").count(), 2, "{ptx}");
            }
            _ => {
                assert!(plain("max", "s32") && plain("min", "s32"), "{ptx}");
                assert!(!ptx.contains(".NaN"), "{ptx}");
            }
        }
    }
    // the packed pairs
    for t in [ScalarType::F16, ScalarType::BF16] {
        let b = KernelBuilder::new(&format!("maxpair_{}", t.name()), [32, 1, 1]).unwrap();
        let x = b.ptr_param("x", t).unwrap();
        let v = b.load(x, &Idx::lit(0), 4, None).unwrap();
        let hi = b.binary_pair(BinOp::Max, [&v[0], &v[1]], [&v[2], &v[3]]).unwrap();
        let lo = b.binary_pair(BinOp::Min, [&v[0], &v[1]], [&v[2], &v[3]]).unwrap();
        b.store(
            x,
            &Idx::lit(4),
            &[hi[0].clone(), hi[1].clone(), lo[0].clone(), lo[1].clone()],
            None,
        )
        .unwrap();
        let ptx = check(&b.finish().unwrap());
        for op in ["max", "min"] {
            assert!(ptx.contains(&format!("\t{op}.NaN.{}x2 ", t.name())), "{ptx}");
            assert!(!ptx.contains(&format!("\t{op}.{}x2 ", t.name())), "{ptx}");
        }
    }
}

#[test]
fn grid_dependency_control_is_sm90_ptx_and_nothing_on_sm80() {
    let b = KernelBuilder::new("griddep", [32, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F32).unwrap();
    b.grid_dependency_wait();
    let v = b.load(x, &Idx::lit(0), 1, None).unwrap();
    b.launch_dependents();
    b.store(x, &Idx::lit(1), &v, None).unwrap();
    let k = b.finish().unwrap();
    let sm90a = check(&k); // assembled for sm_80, sm_90 and sm_90a where ptxas is found
    assert_eq!(sm90a.matches("griddepcontrol.wait;").count(), 1, "{sm90a}");
    assert_eq!(sm90a.matches("griddepcontrol.launch_dependents;").count(), 1, "{sm90a}");
    let sm90 = emit_kernel(&k, Target::Sm90).unwrap();
    assert!(
        sm90.contains("\tgriddepcontrol.wait;")
            && sm90.contains("\tgriddepcontrol.launch_dependents;")
    );
    // sm_80: no programmatic launch, so no instruction (a comment says why)
    let sm80 = emit_kernel(&k, Target::Sm80).unwrap();
    assert!(!sm80.contains("griddepcontrol.wait;"), "{sm80}");
    assert!(!sm80.contains("griddepcontrol.launch_dependents;"), "{sm80}");
    assert!(sm80.contains("// griddepcontrol.wait: nothing on sm_80"), "{sm80}");
}

#[test]
fn mma_assembles_for_f16_and_bf16() {
    for t in [ScalarType::F16, ScalarType::BF16] {
        let b = KernelBuilder::new(&format!("mma_{}", t.name()), [32, 1, 1]).unwrap();
        let x = b.ptr_param("x", t).unwrap();
        let y = b.ptr_param("y", ScalarType::F32).unwrap();
        let lane = b.lane_id();
        let a = b.load(x, &(lane.clone() * Idx::lit(8)), 8, None).unwrap();
        let bb = b.load(x, &(lane.clone() * Idx::lit(4) + Idx::lit(256)), 4, None).unwrap();
        let c = vec![b.f32(0.0); 4];
        let d = b.mma_m16n8k16(&a, &bb, &c).unwrap();
        b.store(y, &(lane * Idx::lit(4)), &d, None).unwrap();
        let ptx = check(&b.finish().unwrap());
        assert!(
            ptx.contains(&format!("mma.sync.aligned.m16n8k16.row.col.f32.{0}.{0}.f32", t.name())),
            "{ptx}"
        );
    }
}

#[test]
fn example_kernels_assemble_with_16_byte_accesses() {
    let copy = check(&examples::copy(ScalarType::F32, 4, 256).unwrap());
    assert!(copy.contains("ld.global.v4.f32") && copy.contains("st.global.v4.f32"), "{copy}");
    let half = check(&examples::copy(ScalarType::F16, 8, 256).unwrap());
    assert!(half.contains("ld.global.v4.b32") && half.contains("st.global.v4.b32"), "{half}");
    let rs = check(&examples::row_sum().unwrap());
    assert!(rs.contains("shfl.sync.bfly.b32") && rs.contains(".shared .align 16"), "{rs}");
}

#[test]
fn bad_kernel_names_are_typed_errors() {
    // the builder keeps names PTX accepts; a name with a dot is refused by one of the two layers
    match KernelBuilder::new("bad.name", [32, 1, 1]) {
        Ok(b) => {
            let k = b.finish().unwrap();
            let e = emit_kernel(&k, Target::Sm90a).unwrap_err();
            assert!(e.to_string().contains("kernel name \"bad.name\""), "{e}");
        }
        Err(e) => assert!(e.to_string().contains("bad.name"), "{e}"),
    }
}

#[test]
fn more_than_48_kib_of_shared_memory_is_dynamic() {
    let k = tilekit_ptx::coverage::big_shared().unwrap();
    let layout = tilekit_ptx::emit::shared_layout(&k);
    assert_eq!((layout.offsets, layout.total, layout.dynamic), (vec![0, 16], 16 + 96 * 1024, true));
    let ptx = check(&k);
    assert!(ptx.contains(".extern .shared .align 16 .b8 tk_dynamic_smem[];"), "{ptx}");
    assert!(ptx.contains("add.u32") && ptx.contains("// smem1_stage"), "{ptx}");
}

#[test]
fn big_shared_kernel_is_right_on_the_interpreter() {
    use tilekit_ir::interp::{run, Args, HostBuffer};
    let k = tilekit_ptx::coverage::big_shared().unwrap();
    let n = 24 * 1024;
    let x: Vec<f32> = (0..2 * n).map(|i| (i as f32 * 0.37).sin() + 2.0).collect();
    let mut args = Args::new();
    args.buffer(HostBuffer::from_f32(&x)).buffer(HostBuffer::from_f32(&vec![f32::NAN; 2 * n]));
    run(&k, [2, 1, 1], &mut args).unwrap();
    let y = args.get_buffer(1).unwrap().to_f32().unwrap();
    for blk in 0..2 {
        for i in [0, 1, 777, n - 1] {
            assert_eq!(y[blk * n + i], x[blk * n + n - 1 - i]);
        }
    }
}

#[test]
fn cluster_kernels_use_distributed_shared_memory_and_cluster_barriers() {
    // each block of a cluster of 4 reads a 2-vector of the next block's shared memory, by an
    // i32 rank and by an i64 rank
    let b = KernelBuilder::new("dsmem", [64, 1, 1]).unwrap();
    b.set_cluster_dim([4, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::F32).unwrap();
    let s = b.shared("s", ScalarType::F32, 128).unwrap();
    let t = b.thread_id(tilekit_ir::Axis::X);
    b.store(s, &(t.clone() * Idx::lit(2)), &[b.f32(1.0), b.f32(2.0)], None).unwrap();
    b.cluster_barrier().unwrap();
    let peer = (b.cluster_cta_rank() + Idx::lit(1)) % Idx::lit(4);
    let v = b.load_cluster(s, &peer, &(t.clone() * Idx::lit(2)), 2).unwrap();
    let peer64 = b.cvt(&peer, ScalarType::I64).unwrap();
    let w = b.load_cluster(s, &peer64, &t, 1).unwrap();
    let sum = v[0].clone() + v[1].clone() + w[0].clone();
    b.store(y, &(b.block_id(tilekit_ir::Axis::X) * Idx::lit(64) + t), &[sum], None).unwrap();
    b.cluster_barrier().unwrap();
    let k = b.finish().unwrap();
    let ptx = check(&k);
    for want in [
        ".reqnctapercluster 4, 1, 1",
        "%cluster_ctarank",
        "mapa.shared::cluster.u32",
        "ld.shared::cluster.v2.f32",
        "ld.shared::cluster.f32",
        "barrier.cluster.arrive.aligned;",
        "barrier.cluster.wait.aligned;",
    ] {
        assert!(ptx.contains(want), "missing {want}:\n{ptx}");
    }
    assert_eq!(ptx.matches("barrier.cluster.wait").count(), 2);
}

#[test]
fn bulk_pipeline_runs_on_the_interpreter_and_assembles_for_sm_90() {
    use tilekit_ir::interp::{run, Args, HostBuffer};
    use tilekit_ptx::coverage::{bulk_pipeline, BULK_TILE};
    for stages in [1i64, 2, 3] {
        let k = bulk_pipeline(stages).unwrap();
        let (grid, tiles) = (3u32, 5i64);
        let n = grid as usize * tiles as usize * BULK_TILE as usize;
        let x: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 / 250.0 - 2.0).collect();
        let mut a = Args::new();
        a.buffer(HostBuffer::from_f32(&x))
            .buffer(HostBuffer::from_f32(&vec![f32::NAN; n]))
            .int(tiles);
        run(&k, [grid, 1, 1], &mut a).unwrap_or_else(|e| panic!("{stages} stages: {e}"));
        let y = a.take_buffer(1).unwrap().to_f32().unwrap();
        for (i, (&xi, &yi)) in x.iter().zip(&y).enumerate() {
            assert_eq!(yi, 2.0 * xi + 1.0, "{stages} stages, element {i}");
        }
        let ptx = check(&k);
        for want in [
            "mbarrier.init.shared::cta.b64",
            "fence.mbarrier_init.release.cluster;",
            "mbarrier.arrive.expect_tx.shared::cta.b64 _,",
            "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes",
            "mbarrier.try_wait.parity.shared::cta.b64",
            "fence.proxy.async.shared::cta;",
            "cp.async.bulk.global.shared::cta.bulk_group",
            "cp.async.bulk.commit_group;",
            "cp.async.bulk.wait_group 0;",
        ] {
            assert!(ptx.contains(want), "missing {want}");
        }
    }
}

#[test]
fn a_multicast_bulk_copy_reaches_both_blocks_of_the_cluster() {
    use tilekit_ir::interp::{run, Args, HostBuffer};
    use tilekit_ptx::coverage::{multicast_pair, BULK_TILE};
    let k = multicast_pair().unwrap();
    let (clusters, t) = (3usize, BULK_TILE as usize);
    let x: Vec<f32> = (0..clusters * t).map(|i| ((i * 31) % 97) as f32 / 16.0 - 3.0).collect();
    let mut a = Args::new();
    a.buffer(HostBuffer::from_f32(&x))
        .buffer(HostBuffer::from_f32(&vec![f32::NAN; 2 * clusters * t]));
    run(&k, [2 * clusters as u32, 1, 1], &mut a).unwrap();
    let y = a.take_buffer(1).unwrap().to_f32().unwrap();
    for blk in 0..2 * clusters {
        let (c, rank) = (blk / 2, (blk % 2) as f32);
        for i in 0..t {
            assert_eq!(y[blk * t + i], (rank + 1.0) * x[c * t + i], "block {blk} element {i}");
        }
    }
    let ptx = check(&k);
    assert!(ptx.contains("complete_tx::bytes.multicast::cluster"), "{ptx}");
    assert!(ptx.contains(".reqnctapercluster 2, 1, 1"));
}

#[test]
fn a_remote_mbarrier_arrival_maps_the_peer_address_and_assembles() {
    use tilekit_ir::{Axis, CmpOp, Val};
    let b = KernelBuilder::new("remote_arrive", [64, 1, 1]).unwrap();
    b.set_cluster_dim([2, 1, 1]).unwrap();
    let bar = b.mbarrier("empty", 2).unwrap();
    let first = b.cmp(CmpOp::Eq, &b.thread_id(Axis::X), &Idx::lit(0)).unwrap();
    b.if_then(&first, |b| {
        b.mbarrier_init(bar, &Idx::lit(1), &Idx::lit(2))?;
        b.fence_mbarrier_init();
        Ok(())
    })
    .unwrap();
    b.cluster_barrier().unwrap();
    // thread 0 of each block arrives on its own barrier 1 and on the peer's
    b.if_then(&first, |b| {
        b.mbarrier_arrive_cluster(bar, &Idx::lit(1), &b.cluster_cta_rank())?;
        b.mbarrier_arrive_cluster(bar, &Idx::lit(1), &(Val::lit(1) - b.cluster_cta_rank()))
    })
    .unwrap();
    b.mbarrier_wait(bar, &Idx::lit(1), &Idx::lit(0)).unwrap();
    b.cluster_barrier().unwrap();
    let k = b.finish().unwrap();
    tilekit_ir::interp::run(&k, [4, 1, 1], &mut tilekit_ir::interp::Args::new()).unwrap();
    let ptx = check(&k);
    assert_eq!(ptx.matches("mapa.shared::cluster.u32").count(), 2, "{ptx}");
    assert_eq!(ptx.matches("mbarrier.arrive.shared::cluster.b64 _, [").count(), 2, "{ptx}");
}

#[test]
fn elect_and_setmaxnreg_need_hopper() {
    let b = KernelBuilder::new("wg", [256, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::I32).unwrap();
    b.setmaxnreg(true, 232).unwrap();
    let leader = b.elect();
    let t = b.thread_id(tilekit_ir::Axis::X);
    b.if_then(&leader, |b| b.store(y, &t, std::slice::from_ref(&t), None)).unwrap();
    let k = b.finish().unwrap();
    let ptx = emit_kernel(&k, Target::Sm90a).unwrap();
    assert!(ptx.contains("setmaxnreg.inc.sync.aligned.u32 232;") && ptx.contains("elect.sync _|"));
    assert!(emit_kernel(&k, Target::Sm90).unwrap_err().to_string().contains("sm_90a"));
    assert!(emit_kernel(&k, Target::Sm80).is_err());
    if let Some(p) = ptxas() {
        let tmp = tempfile::Builder::new().prefix("tk-wg-").tempdir().unwrap();
        let path = tmp.path().join("wg.ptx");
        std::fs::write(&path, &ptx).unwrap();
        let out = Command::new(p)
            .arg("-arch=sm_90a")
            .arg(&path)
            .arg("-o")
            .arg(tmp.path().join("wg.cubin"))
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
}

#[test]
fn tma_round_trips_match_the_cpu_reference_and_assemble_for_sm_90() {
    use tilekit_ir::interp::run;
    use tilekit_ptx::coverage::tma::cases;
    for c in cases() {
        let k = c.kernel().unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let mut s = 0x2545_f491_4f6c_dd1du64 ^ c.len() as u64;
        let x: Vec<f32> = (0..c.len())
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s >> 40) as f32 / (1u64 << 22) as f32 - 2.0
            })
            .collect();
        let mut a = c.args(&x);
        run(&k, c.grid(), &mut a).unwrap_or_else(|e| panic!("{}: {e}", c.name));
        let bits = |b: tilekit_ir::interp::HostBuffer| -> Vec<u32> {
            b.to_f32().unwrap().iter().map(|v| v.to_bits()).collect()
        };
        let (ry, rz) = c.reference(&x);
        assert_eq!(bits(a.take_buffer(1).unwrap()), ry, "{}: y", c.name);
        let z = bits(a.take_buffer(2).unwrap());
        assert_eq!(z, rz, "{}: z", c.name);
        assert!(z.contains(&0), "{}: no box reached outside the tensor", c.name);
        let ptx = check(&k);
        let r = c.box_dims.len();
        for want in [
            ".param .align 64 .b8 param3[128]".to_string(),
            "cvta.param.u64".to_string(),
            format!(
                "cp.async.bulk.tensor.{r}d.shared::cluster.global.mbarrier::complete_tx::bytes"
            ),
            format!("cp.async.bulk.tensor.{r}d.global.shared::cta.bulk_group"),
        ] {
            assert!(ptx.contains(&want), "{}: missing {want}\n{ptx}", c.name);
        }
        let align = c.swizzle.shared_align();
        assert!(ptx.contains(&format!(".shared .align {align} .b8 smem0_in")), "{}", c.name);
    }
}

#[test]
fn tensor_copies_need_hopper_and_multicast_needs_sm_90a() {
    use tilekit_ir::tma::{OobFill, TensorMapSpec, TmaSwizzle};
    let b = KernelBuilder::new("mc", [32, 1, 1]).unwrap();
    b.set_cluster_dim([2, 1, 1]).unwrap();
    let x = b.ptr_param("x", ScalarType::F32).unwrap();
    let spec = TensorMapSpec::new(ScalarType::F32, &[8], TmaSwizzle::None, OobFill::Zero).unwrap();
    let m = b.tensor_map_param("xm", x, spec).unwrap();
    let s = b.shared("s", ScalarType::F32, 8).unwrap();
    let bar = b.mbarrier("bar", 1).unwrap();
    b.tensor_load_multicast(s, &Idx::lit(0), m, &[Idx::lit(0)], bar, &Idx::lit(0), &Idx::lit(3))
        .unwrap();
    b.tensor_prefetch(m, &[Idx::lit(8)]).unwrap();
    let k = b.finish().unwrap();
    let e = emit_kernel(&k, Target::Sm90).unwrap_err().to_string();
    assert!(e.contains("need sm_90a"), "{e}");
    let e = emit_kernel(&k, Target::Sm80).unwrap_err().to_string();
    assert!(e.contains("sm_90"), "{e}");
    let ptx = emit_kernel(&k, Target::Sm90a).unwrap();
    assert!(ptx.contains("complete_tx::bytes.multicast::cluster"), "{ptx}");
    assert!(ptx.contains("cp.async.bulk.prefetch.tensor.1d.L2.global"), "{ptx}");
    if let Some(p) = ptxas() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("mc.ptx");
        std::fs::write(&f, &ptx).unwrap();
        let o = Command::new(p)
            .args(["-arch=sm_90a", "-o"])
            .arg(dir.path().join("mc.cubin"))
            .arg(&f)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}\n{ptx}", String::from_utf8_lossy(&o.stderr));
    }
}

#[test]
fn a_tensor_store_whose_last_chunk_runs_past_its_buffer_is_named() {
    // rank 1, 150 f32: the store writes the 16-byte chunk holding elements 148..152 whole (the
    // GPU's clipping granularity), so a y of exactly 150 elements is too short
    use tilekit_ir::interp::{self, AsyncBug, HostBuffer, InterpError};
    let c = tilekit_ptx::coverage::tma::case("tma_rank1").unwrap();
    let k = c.kernel().unwrap();
    let x: Vec<f32> = (0..c.len()).map(|i| i as f32 * 0.5 + 1.0).collect();
    let mut args = c.args(&x);
    args.set_buffer(1, HostBuffer::from_f32(&vec![f32::NAN; 150]));
    match interp::run(&k, c.grid(), &mut args) {
        Err(InterpError::Async { kind, detail, .. }) => {
            assert_eq!(kind, AsyncBug::StorePastBuffer, "{detail}");
            assert!(detail.contains("element 150 of a buffer of 150"), "{detail}");
        }
        other => panic!("expected StorePastBuffer, got {other:?}"),
    }
}

/// Global atomics and memory ordering: a relaxed ticket, a release add, a GPU-scope fence and an
/// acquire load (alone and in a spin loop) come out as the PTX instructions of those names and assemble.
#[test]
fn atomics_and_acquire_release_emit() {
    use tilekit_ir::Axis;
    let b = KernelBuilder::new("atomics", [64, 1, 1]).unwrap();
    let c = b.ptr_param("c", ScalarType::U32).unwrap();
    let y = b.ptr_param("y", ScalarType::U32).unwrap();
    let t = b.thread_id(Axis::X);
    let old = b.atomic_add(c, &Idx::lit(0), &Idx::lit(1), false).unwrap();
    b.atomic_add(c, &b.block_id(Axis::X), &old, true).unwrap();
    b.fence_gpu();
    b.wait_acquire(c, &Idx::lit(0), &Idx::lit(64)).unwrap();
    let seen = b.load_acquire(c, &(t.clone() + Idx::lit(1))).unwrap();
    b.store(y, &t, &[seen], None).unwrap();
    let ptx = check(&b.finish().unwrap());
    assert!(ptx.contains("atom.relaxed.gpu.global.add.u32"), "{ptx}");
    assert!(ptx.contains("atom.release.gpu.global.add.u32"), "{ptx}");
    assert!(ptx.contains("fence.acq_rel.gpu;"), "{ptx}");
    assert!(ptx.contains("ld.acquire.gpu.global.u32"), "{ptx}");
    assert!(ptx.contains("setp.lt.u32"), "{ptx}");
    assert!(!ptx.contains("nanosleep"), "{ptx}");
}

/// A wait with a backoff: thread 0 alone spins (inside an `if`), sleeping 256 ns after each
/// failed poll; the loop exits on the counter reaching its target, then the block barrier.
#[test]
fn wait_acquire_backoff_emits_nanosleep_loop() {
    use tilekit_ir::{Axis, CmpOp};
    let b = KernelBuilder::new("backoff", [128, 1, 1]).unwrap();
    let c = b.ptr_param("c", ScalarType::U32).unwrap();
    let first = b.cmp(CmpOp::Eq, &b.thread_id(Axis::X), &Idx::lit(0)).unwrap();
    b.if_then(&first, |b| b.wait_acquire_backoff(c, &Idx::lit(3), &Idx::lit(8), 256)).unwrap();
    b.barrier();
    let ptx = check(&b.finish().unwrap());
    let lines: Vec<&str> = ptx.lines().map(str::trim).collect();
    let ld = lines.iter().position(|l| l.starts_with("ld.acquire.gpu.global.u32")).expect(&ptx);
    assert!(lines[ld + 1].starts_with("setp.lt.u32"), "{ptx}");
    assert!(lines[ld + 2].starts_with("@!") && lines[ld + 2].contains("bra"), "{ptx}");
    assert_eq!(lines[ld + 3], "nanosleep.u32 256;", "{ptx}");
    assert!(lines[ld + 4].starts_with("bra L"), "{ptx}");
    assert_eq!(ptx.matches("nanosleep.u32").count(), 1, "{ptx}");
}

#[test]
fn clock_reads_are_special_register_moves_that_assemble() {
    let b = KernelBuilder::new("clocks", [64, 1, 1]).unwrap();
    let y = b.ptr_param("y", ScalarType::I64).unwrap();
    let tid = b.thread_id(tilekit_ir::Axis::X);
    let c0 = b.clock(tilekit_ir::Clock::Sm);
    let g = b.clock(tilekit_ir::Clock::Global);
    let c1 = b.clock(tilekit_ir::Clock::Sm);
    let at = tid * Idx::lit(4);
    b.store(y, &at, &[c0, g], None).unwrap();
    b.store(y, &(at + Idx::lit(2)), &[c1], None).unwrap();
    let ptx = check(&b.finish().unwrap());
    assert_eq!(ptx.matches("%clock64;").count(), 2, "{ptx}");
    assert_eq!(ptx.matches("%globaltimer;").count(), 1, "{ptx}");
    // in program order: clock64, globaltimer, clock64
    let at = |s: &str, from: usize| ptx[from..].find(s).map(|i| i + from).unwrap();
    let first = at("%clock64;", 0);
    let timer = at("%globaltimer;", 0);
    assert!(first < timer && timer < at("%clock64;", first + 1), "{ptx}");
    assert!(ptx.lines().any(|l| l.trim().starts_with("mov.u64 %rd") && l.contains("%clock64")));
}

// ptxas assembled this file's kernels, or the summary counts one ignored test (docs/testing.md)
tilekit_ptx::ptxas_sentinel!();
