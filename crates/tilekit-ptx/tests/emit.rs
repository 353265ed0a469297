//! Every op the builder accepts, on every type, emitted for every target and — where `ptxas` is
//! available (`TILEKIT_PTXAS=/path/to/ptxas`, or `ptxas` on the PATH) — assembled. CI sets
//! `TILEKIT_REQUIRE_PTXAS=1` so that a missing assembler fails instead of skipping.

use std::path::PathBuf;
use std::process::Command;

use tilekit_ir::{examples, Axis, BinOp, CmpOp, Kernel, KernelBuilder, ScalarType, ShflMode, UnOp};
use tilekit_layout::Idx;
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
    let dir = std::env::temp_dir().join(format!("tk-ptx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut sm90a = String::new();
    for t in Target::ALL {
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

const TYPES: [ScalarType; 7] = [
    ScalarType::I32,
    ScalarType::U32,
    ScalarType::I64,
    ScalarType::F16,
    ScalarType::BF16,
    ScalarType::F32,
    ScalarType::F64,
];

/// One kernel per type exercising every op the builder accepts for it.
fn every_op(t: ScalarType) -> Kernel {
    let b = KernelBuilder::new(&format!("every_op_{}", t.name()), [64, 1, 1]).unwrap();
    let x = b.ptr_param("x", t).unwrap();
    let y = b.ptr_param("y", t).unwrap();
    let n = b.scalar_param("n", ScalarType::I32).unwrap();
    let tid = b.thread_id(Axis::X);
    let gid = b.block_id(Axis::X) * Idx::lit(64) + tid.clone();
    let inside = b.cmp(CmpOp::Lt, &gid, &n).unwrap();
    let widest = *tilekit_ir::op::valid_vector_widths(t).last().unwrap();
    let vec = b.load(x, &(gid.clone() * Idx::lit(widest as i64)), widest, Some(&inside)).unwrap();
    let a = b.load(x, &gid, 1, None).unwrap().remove(0);
    let c = vec[widest - 1].clone();
    let mut acc = a.clone();
    for op in [
        UnOp::Neg,
        UnOp::Not,
        UnOp::Abs,
        UnOp::Exp2Approx,
        UnOp::RcpApprox,
        UnOp::RsqrtApprox,
        UnOp::Sqrt,
    ] {
        if let Ok(v) = b.unary(op, &acc) {
            acc = v;
        }
    }
    for op in [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::Rem,
        BinOp::Min,
        BinOp::Max,
        BinOp::And,
        BinOp::Or,
        BinOp::Xor,
        BinOp::Shl,
        BinOp::Shr,
    ] {
        if let Ok(v) = b.binary(op, &acc, &c) {
            acc = v;
        }
    }
    acc = b.fma(&acc, &c, &a).unwrap();
    for op in [CmpOp::Lt, CmpOp::Le, CmpOp::Gt, CmpOp::Ge, CmpOp::Eq, CmpOp::Ne] {
        let p = b.cmp(op, &acc, &c).unwrap();
        acc = b.select(&p, &acc, &c).unwrap();
    }
    for to in TYPES {
        let v = b.cvt(&acc, to).unwrap();
        let back = b.cvt(&v, t).unwrap();
        acc = b.binary(BinOp::Max, &acc, &back).unwrap_or(back);
    }
    let zero = b.cvt(&b.i32(0), t).unwrap();
    let p = b.cmp(CmpOp::Ne, &acc, &zero).unwrap();
    let q = b.vote_any(&p).unwrap();
    let r = b.vote_all(&q).unwrap();
    let ballot = b.ballot(&r).unwrap();
    let ballot_t = b.cvt(&ballot, t).unwrap();
    acc = b.select(&r, &acc, &ballot_t).unwrap();
    for mode in [ShflMode::Idx, ShflMode::Up, ShflMode::Down, ShflMode::Bfly] {
        // the builder refuses non-32-bit shuffles with a typed error
        if let Ok(v) = b.shfl(mode, &acc, &Idx::lit(1)) {
            acc = v;
        }
    }
    let s = b.shared("stage", t, 64 * widest).unwrap();
    b.store(s, &(tid.clone() * Idx::lit(widest as i64)), &vec, None).unwrap();
    b.barrier();
    let back = b
        .load(
            s,
            &(((tid.clone() + Idx::lit(1)) % Idx::lit(64)) * Idx::lit(widest as i64)),
            widest,
            None,
        )
        .unwrap();
    let sums = b
        .for_range(&Idx::lit(0), &n, &Idx::lit(1), &[acc.clone()], |b, i, carried| {
            let iv = b.cvt(&i, t)?;
            Ok(vec![b.binary(BinOp::Add, &carried[0], &iv)?])
        })
        .unwrap();
    let chosen = b
        .if_then_else(&inside, |_| Ok(vec![sums[0].clone()]), |_| Ok(vec![back[0].clone()]))
        .unwrap();
    let mut out = back.clone();
    out[0] = chosen[0].clone();
    b.store(y, &(gid * Idx::lit(widest as i64)), &out, Some(&inside)).unwrap();
    b.finish().unwrap()
}

#[test]
fn every_op_on_every_type_assembles() {
    for t in TYPES {
        let ptx = check(&every_op(t));
        assert!(ptx.contains("bar.sync 0;"));
        assert_eq!(ptx.contains("shfl.sync.bfly.b32"), t.size_bytes() == 4, "{}", t.name());
        assert!(ptx.contains("vote.sync.ballot.b32"));
    }
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
