//! Running an IR kernel on the GPU with the interpreter's argument list.
//!
//! The interpreter and the GPU take the same [`Args`] (buffers, typed scalars, integers in
//! parameter order), so one test body runs on both backends and compares — the pattern of
//! candle's `test_device!`:
//!
//! ```text
//!   Args ──interp::run──────────────────────────► Args' (buffers written)
//!   Args ──upload──► device buffers ──launch──► download ──► Args'' (same layout)
//!                                              compare Args' with Args'' bit for bit
//! ```

use cudarc::driver::CudaSlice;
use tilekit_ir::interp::{Arg, Args, HostBuffer};
use tilekit_ir::{Kernel as IrKernel, ParamKind, ScalarType};

use crate::device::Gpu;
use crate::error::{CudaError, Result};
use crate::module::{Kernel, KernelArgs, LaunchDims};

/// Device copies of an argument list, ready to launch (and relaunch, for timing).
#[derive(Debug)]
pub struct DeviceArgs {
    buffers: Vec<(usize, ScalarType, CudaSlice<u8>)>,
    args: KernelArgs,
}

impl DeviceArgs {
    /// The launch arguments.
    pub fn kernel_args(&self) -> &KernelArgs {
        &self.args
    }
    /// The device buffer of argument `i`, if it is one.
    pub fn buffer(&self, i: usize) -> Option<&CudaSlice<u8>> {
        self.buffers.iter().find(|(j, _, _)| *j == i).map(|(_, _, b)| b)
    }
}

fn bad(kernel: &IrKernel, i: usize, got: &str, want: String) -> CudaError {
    CudaError::BadLaunch {
        kernel: kernel.name.clone(),
        field: "argument",
        value: format!("#{i} ({got})"),
        rule: format!(
            "parameter {} is {want}",
            kernel.params.get(i).map_or("?", |p| p.name.as_str())
        ),
    }
}

impl Gpu {
    /// Uploads an argument list for an IR kernel, checking it against the parameters.
    pub fn upload_args(&self, kernel: &IrKernel, args: &Args) -> Result<DeviceArgs> {
        if args.len() != kernel.params.len() {
            return Err(CudaError::BadLaunch {
                kernel: kernel.name.clone(),
                field: "argument count",
                value: args.len().to_string(),
                rule: format!("the kernel has {} parameters", kernel.params.len()),
            });
        }
        let mut out = DeviceArgs { buffers: Vec::new(), args: KernelArgs::new() };
        for (i, (p, a)) in kernel.params.iter().zip(args.items()).enumerate() {
            match (p.kind, a) {
                (ParamKind::GlobalPtr(t), Arg::Buffer(b)) if b.elem() == t => {
                    // never allocate zero bytes: a kernel may still form (masked) addresses
                    let bytes =
                        if b.as_bytes().is_empty() { vec![0u8; 16] } else { b.as_bytes().to_vec() };
                    let mut d = self.upload(&bytes)?;
                    let ptr = self.device_ptr_mut(&mut d);
                    out.args.ptr(ptr);
                    out.buffers.push((i, t, d));
                }
                (ParamKind::GlobalPtr(t), other) => {
                    return Err(bad(kernel, i, &format!("{other:?}"), format!("a {t} buffer")))
                }
                (ParamKind::Scalar(t), Arg::Int(v)) if t.is_int() => {
                    match t {
                        ScalarType::I64 => out.args.i64(*v),
                        _ => out.args.u32(*v as u32),
                    };
                }
                (ParamKind::Scalar(t), Arg::Scalar(l)) if l.ty() == t => {
                    out.args.i64(l.bits() as i64);
                }
                (ParamKind::Scalar(t), other) => {
                    return Err(bad(kernel, i, &format!("{other:?}"), format!("a {t} scalar")))
                }
                (ParamKind::TensorMap { spec, global }, Arg::TensorMap(m)) => {
                    // the viewed buffer is an earlier parameter, already uploaded
                    let addr = out
                        .buffers
                        .iter()
                        .find(|(j, _, _)| *j == global as usize)
                        .map(|(_, _, d)| self.device_ptr(d))
                        .ok_or_else(|| {
                            bad(kernel, i, "a map", "a map over an uploaded buffer".into())
                        })?;
                    let bytes = self.encode_tensor_map(&p.name, &spec, m, addr)?;
                    out.args.tensor_map(bytes);
                }
                (ParamKind::TensorMap { .. }, other) => {
                    return Err(bad(kernel, i, &format!("{other:?}"), "a tensor map".into()))
                }
            }
        }
        Ok(out)
    }

    /// Launches an IR kernel (compiled with [`Gpu::compile`]) on uploaded arguments.
    ///
    /// # Safety
    /// `kernel` must be the compilation of `ir`, and `args` must come from
    /// [`upload_args`](Self::upload_args) of the same `ir` with buffers that cover every
    /// element the kernel touches over `grid` (the interpreter checks that for the same
    /// arguments): `args` is laid out by `ir`'s parameter list, and the driver reads it by
    /// `kernel`'s ([`Gpu::launch`]).
    pub unsafe fn launch_ir(
        &self,
        kernel: &Kernel,
        ir: &IrKernel,
        grid: [u32; 3],
        args: &DeviceArgs,
    ) -> Result<()> {
        let [x, y, z] = ir.block_dim;
        let smem = tilekit_ptx::emit::shared_layout(ir);
        let dynamic_smem = if smem.dynamic { smem.total as u32 } else { 0 };
        let dims = LaunchDims { grid: (grid[0], grid[1], grid[2]), block: (x, y, z), dynamic_smem };
        // SAFETY: forwarded to the caller (see above)
        unsafe { self.launch(kernel, dims, &args.args) }
    }

    /// Downloads every buffer back into the argument list (replacing the host copies).
    pub fn download_args(&self, dev: &DeviceArgs, args: &mut Args) -> Result<()> {
        self.synchronize()?;
        for (i, t, d) in &dev.buffers {
            let mut bytes = self.download(d)?;
            let want = args.get_buffer(*i).map_or(0, HostBuffer::size_bytes);
            bytes.truncate(want);
            let hb = HostBuffer::from_bytes(*t, bytes).ok_or_else(|| CudaError::Driver {
                call: "download",
                code: format!("buffer {i} came back with a length that is not a multiple of {t}"),
            })?;
            args.set_buffer(*i, hb);
        }
        Ok(())
    }

    /// Upload, launch, synchronise and download in one call: the GPU twin of
    /// `tilekit_ir::interp::run`.
    ///
    /// # Safety
    /// `kernel` must be the compilation of `ir`, and `args` must cover every element the
    /// kernel touches over `grid` ([`launch_ir`](Self::launch_ir)).
    pub unsafe fn run_ir(
        &self,
        kernel: &Kernel,
        ir: &IrKernel,
        grid: [u32; 3],
        args: &mut Args,
    ) -> Result<()> {
        let dev = self.upload_args(ir, args)?;
        // SAFETY: forwarded to the caller (see above); `dev` was laid out from `ir`
        unsafe { self.launch_ir(kernel, ir, grid, &dev)? };
        self.download_args(&dev, args)
    }
}
