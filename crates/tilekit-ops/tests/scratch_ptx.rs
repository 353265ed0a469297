use tilekit_ops::gemm_sm90::{build_gemm_sm90, Epilogue, GemmConfig, Raster};
#[test]
fn dump() {
    let b = GemmConfig { bn: 256, stages: 3, ..GemmConfig::default() };
    for (name, cfg) in [
        ("a", b),
        ("a_ov", GemmConfig { overlap: true, ..b }),
        ("a_p", GemmConfig { persistent: true, ..b }),
        ("a_pov", GemmConfig { persistent: true, overlap: true, ..b }),
        ("a_povg", GemmConfig { persistent: true, overlap: true, raster: Raster::Grouped(8), ..b }),
        ("a_f32", GemmConfig { output: tilekit_ir::ScalarType::F32, ..b }),
        (
            "t_f32",
            GemmConfig {
                output: tilekit_ir::ScalarType::F32,
                bn: 128,
                stages: 4,
                epilogue: Epilogue::Tma,
                persistent: true,
                overlap: true,
                ..b
            },
        ),
        ("t", GemmConfig { epilogue: Epilogue::Tma, ..b }),
    ] {
        let k = build_gemm_sm90(cfg).unwrap();
        let ptx = tilekit_ptx::emit_kernel(&k, tilekit_ptx::Target::Sm90a).unwrap();
        std::fs::write(format!("/tmp/g_{name}.ptx"), ptx).unwrap();
    }
}
