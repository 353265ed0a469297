//! `tilekit`'s argument parser and commands, in-process, on arbitrary argument vectors: the input
//! is one argument per line. Only commands that need no GPU and write no file run: `show`,
//! `sfc`, `morton`, `banks`, and `run` (interpreter) and `ptx` on small shapes. Inputs that
//! would write a file (`--svg`), read one (`--from`, or any argument naming an existing path) or
//! name another command are skipped. Run with `-close_fd_mask=1` (fuzz/run.sh does) so that the
//! commands' output goes nowhere.
#![no_main]

use std::path::Path;

use clap::Parser;
use libfuzzer_sys::fuzz_target;
use tilekit_cli::{banks, morton, ptx, run, sfc, show, Cli, Command};

/// Most elements of a `run` shape (the interpreter takes about a microsecond per element).
const RUN_MAX_ELEMENTS: i64 = 1 << 14;
/// Most threads (grid blocks × threads per block) of a `run` on the interpreter: what one input
/// may cost is bounded by the work, not only by the elements (softmax of 2900 rows of 5 is 14 500
/// elements but 2900 blocks of 256 threads, ≈ 10 s under AddressSanitizer). The interpreter's
/// speed is measured by bench/RESULTS.md, not fuzzed; its correctness on such shapes is tested.
const RUN_MAX_THREADS: u64 = 1 << 16;
/// Most elements of a `ptx` shape (building the kernel runs host code on data of that size).
const PTX_MAX_ELEMENTS: i64 = 1 << 16;

const COMMANDS: [&str; 6] = ["show", "sfc", "morton", "banks", "run", "ptx"];

fn small_shape(shape: &str, max: i64) -> bool {
    match run::parse_shape(shape) {
        Ok(dims) => {
            dims.iter().try_fold(1i64, |acc, &d| acc.checked_mul(d)).is_some_and(|n| n <= max)
        }
        Err(_) => true, // refused before any work
    }
}

/// Whether the launch `run` would make has at most [`RUN_MAX_THREADS`] threads (a shape or kernel
/// the library refuses costs nothing and is let through to its error).
fn small_launch(kernel: &str, shape: &str, dtype: Option<tilekit_ir::ScalarType>) -> bool {
    let Ok(dims) = run::parse_shape(shape) else { return true };
    let ty = dtype.unwrap_or_else(|| run::default_dtype(kernel));
    match tilekit_ops::run::plan(kernel, &dims, ty) {
        Ok((k, grid)) => {
            let blocks = grid.iter().map(|&g| u64::from(g)).product::<u64>();
            let threads = k.block_dim.iter().map(|&t| u64::from(t)).product::<u64>();
            blocks.saturating_mul(threads) <= RUN_MAX_THREADS
        }
        Err(_) => true,
    }
}

fn execute(cmd: Command) {
    let result = match cmd {
        Command::Show(a) => {
            if a.svg.is_some() || a.from.is_some() {
                return;
            }
            show::run(&a)
        }
        Command::Sfc(a) => {
            if a.svg.is_some() {
                return;
            }
            sfc::run(&a)
        }
        Command::Morton(a) => {
            if a.svg.is_some() {
                return;
            }
            morton::run(&a)
        }
        Command::Banks(a) => {
            if a.svg.is_some() {
                return;
            }
            banks::run(&a)
        }
        Command::Run(a) => {
            if a.backend != "interp"
                || !small_shape(&a.shape, RUN_MAX_ELEMENTS)
                || !small_launch(&a.kernel, &a.shape, a.dtype)
            {
                return;
            }
            run::run(&a)
        }
        Command::Ptx(a) => {
            if !small_shape(&a.shape, PTX_MAX_ELEMENTS) {
                return;
            }
            ptx::run(&a)
        }
        _ => return,
    };
    if let Err(e) = result {
        // what main_entry prints on stderr
        let _ = e.to_string();
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let args: Vec<&str> = text.split('\n').collect();
    if args.len() > 24 || !COMMANDS.contains(&args[0]) {
        return;
    }
    if args[1..].iter().any(|a| !a.is_empty() && Path::new(a).exists()) {
        return;
    }
    match Cli::try_parse_from(std::iter::once("tilekit").chain(args.iter().copied())) {
        Ok(Cli { command: Some(cmd) }) => execute(cmd),
        Ok(Cli { command: None }) => {}
        Err(e) => {
            let _ = e.render().to_string();
        }
    }
});
