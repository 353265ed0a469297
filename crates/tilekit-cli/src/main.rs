//! The `tilekit` binary. All logic lives in the `tilekit_cli` library and the layers below it.
fn main() -> std::process::ExitCode {
    tilekit_cli::main_entry()
}
