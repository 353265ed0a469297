//! The `tilekit` binary. All logic lives in `tilekit-cli` and the layers below it.
fn main() -> std::process::ExitCode {
    tilekit_cli::main_entry()
}
