//! Prints the text dump of the example kernels: `cargo run -p tilekit-ir --example dump_examples`.
fn main() -> Result<(), tilekit_ir::IrError> {
    println!("{}", tilekit_ir::examples::copy(tilekit_ir::ScalarType::F32, 4, 64)?);
    println!("{}", tilekit_ir::examples::row_sum()?);
    Ok(())
}
