//! Prints the PTX of the IR crate's example kernels: `cargo run -p tilekit-ptx --example emit_examples -- DIR`
//! writes one `.ptx` file per kernel and target into DIR (for ptxas).
use tilekit_ir::examples;
use tilekit_ir::ScalarType;
use tilekit_ptx::{emit_kernel, Target};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = std::env::args().nth(1).unwrap_or_else(|| ".".into());
    std::fs::create_dir_all(&dir)?;
    let kernels = [
        examples::copy(ScalarType::F32, 4, 256)?,
        examples::copy(ScalarType::F16, 8, 256)?,
        examples::copy(ScalarType::I64, 2, 128)?,
        examples::row_sum()?,
    ];
    for (i, k) in kernels.iter().enumerate() {
        for t in Target::ALL {
            let ptx = emit_kernel(k, t)?;
            let path = format!("{dir}/{i}_{}_{}.ptx", k.name, t.name());
            std::fs::write(&path, ptx)?;
            println!("{path}");
        }
    }
    Ok(())
}
