//! Arguments bound to a kernel's parameters by name, checked against what the kernel assumes.
//!
//! A kernel's parameter list is positional (`x, x.len0, x.len1, x.stride0, x.stride1, y, …`)
//! and its code carries assumptions about each tensor (element type, rank, the vector width
//! of the last dim, the 32-bit index type). Binding turns a tensor into those slots and checks
//! every assumption first, so a mismatch is a named error instead of a wrong result or a
//! fault:
//!
//! ```text
//!   Bindings::new(&kernel)
//!     .input("x", &x, &backend)?      x: ptr ─► slot 0 (+ offset)   len0,len1 ─► slots 1,2
//!     .output("y", &mut y, &backend)? y: …                          stride0,1 ─► slots 3,4
//!     .int("n", 5)?
//!   checks per tensor:  parameter exists and is a tensor · dtype · rank
//!                       vector v: last stride 1, v | last length, v | other strides,
//!                                 first element aligned to v elements
//!                       lengths, strides and the largest offset fit the index type
//!   finish()?           every parameter bound (the first missing one is named)
//! ```

use tilekit_ir::tensor::TensorLayout;
use tilekit_ir::tma::TensorMapArg;
use tilekit_ir::{Lit, ParamKind, ScalarType, TensorParamInfo};

use crate::backend::{Backend, TensorIn, TensorOut};
use crate::compiled::CompiledKernel;
use crate::error::{OpsError, Result};

/// One bound parameter.
#[derive(Debug)]
pub enum Slot<'a, B: Backend + ?Sized + 'a> {
    /// A tensor the kernel reads: the backend's handle and the offset of its first element.
    In {
        /// Backend handle of the memory.
        mem: B::In<'a>,
        /// Offset in elements of the tensor's first element.
        offset: i64,
        /// Element type.
        elem: ScalarType,
    },
    /// A tensor the kernel writes.
    Out {
        /// Backend handle of the memory.
        mem: B::Out<'a>,
        /// Offset in elements of the tensor's first element.
        offset: i64,
        /// Element type.
        elem: ScalarType,
    },
    /// An integer parameter (lengths, strides, counts) of the parameter's integer type.
    Int(i64),
    /// A typed scalar (f32, …).
    Scalar(Lit),
    /// A TMA tensor map over the tensor bound to the pointer parameter it views: that tensor's
    /// dims and byte strides (the backend encodes it with the tensor's address).
    TensorMap(TensorMapArg),
}

/// Arguments for one launch of a kernel, bound by name.
///
/// ```
/// use tilekit_ir::{examples, tensor::HostTensor, ScalarType};
/// use tilekit_ops::{backend::Interp, bind::Bindings, compiled::CompiledKernel};
/// let k = CompiledKernel::new(examples::copy(ScalarType::F32, 4, 64).unwrap());
/// let x = HostTensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
/// // `examples::copy` takes raw pointers: only names and scalars can be checked
/// let e = Bindings::<Interp>::new(&k).input("nope", &x, &Interp).unwrap_err();
/// assert!(e.to_string().contains("has no tensor parameter `nope`"), "{e}");
/// ```
pub struct Bindings<'a, B: Backend + ?Sized + 'a> {
    kernel: &'a CompiledKernel,
    slots: Vec<Option<Slot<'a, B>>>,
}

impl<'a, B: Backend + ?Sized + 'a> std::fmt::Debug for Bindings<'a, B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let bound = self.slots.iter().filter(|s| s.is_some()).count();
        write!(f, "Bindings({}: {bound} of {} bound)", self.kernel.kernel().name, self.slots.len())
    }
}

fn bind_error(kernel: &str, param: &str, value: impl std::fmt::Display, rule: String) -> OpsError {
    OpsError::Bind { kernel: kernel.into(), param: param.into(), value: value.to_string(), rule }
}

/// The tensor-map argument of a strided tensor (dims innermost first, byte strides of dims
/// 1..); its innermost stride must be 1 (or its innermost length 1).
///
/// ```
/// use tilekit_ir::{tensor::TensorLayout, ScalarType};
/// let l = TensorLayout::contiguous(ScalarType::F16, vec![3, 5, 8]).unwrap();
/// let a = tilekit_ops::bind::map_arg(&l).unwrap();
/// assert_eq!((a.dims(), a.byte_strides()), (&[8u64, 5, 3][..], &[16u64, 80][..]));
/// ```
pub fn map_arg(layout: &TensorLayout) -> Result<TensorMapArg> {
    let (shape, strides) = (layout.shape(), layout.strides());
    let r = shape.len();
    let bad = |rule: &str| {
        OpsError::invalid("tensor map", "layout", format!("{shape:?} / {strides:?}"), rule)
    };
    if r == 0 || (shape[r - 1] > 1 && strides[r - 1] != 1) {
        return Err(bad("at least one dim, the innermost contiguous (stride 1)"));
    }
    if shape.iter().chain(strides).any(|&v| v < 0) {
        return Err(bad("non-negative lengths and strides"));
    }
    let size = layout.dtype().size_bytes() as u64;
    let dims: Vec<u64> = shape.iter().rev().map(|&l| l as u64).collect();
    let bytes: Vec<u64> = strides.iter().rev().skip(1).map(|&s| s as u64 * size).collect();
    Ok(TensorMapArg::new(&dims, &bytes))
}

/// Checks `layout` (with its first element at byte address `address`) against the tensor
/// parameter `info` of a kernel whose lengths and strides have type `index`.
///
/// ```
/// use tilekit_ir::{tensor::TensorLayout, ScalarType, TensorParamInfo};
/// use tilekit_ops::bind::check_tensor;
/// let info = TensorParamInfo { name: "x".into(), elem: ScalarType::F32, rank: 2, ptr_param: 0, vector: 4 };
/// let l = TensorLayout::contiguous(ScalarType::F32, vec![3, 8]).unwrap();
/// assert!(check_tensor("k", &info, ScalarType::I32, &l, 0).is_ok());
/// let odd = TensorLayout::contiguous(ScalarType::F32, vec![3, 7]).unwrap();
/// let e = check_tensor("k", &info, ScalarType::I32, &odd, 0).unwrap_err().to_string();
/// assert!(e.contains("4-element vectors"), "{e}");
/// ```
pub fn check_tensor(
    kernel: &str,
    info: &TensorParamInfo,
    index: ScalarType,
    layout: &TensorLayout,
    address: u64,
) -> Result<()> {
    let name = info.name.as_str();
    if layout.dtype() != info.elem {
        return Err(bind_error(
            kernel,
            name,
            layout.dtype(),
            format!("the kernel was built for {} elements", info.elem),
        ));
    }
    if layout.rank() != info.rank {
        return Err(bind_error(
            kernel,
            name,
            format!("a rank-{} tensor {:?}", layout.rank(), layout.shape()),
            format!("the parameter has rank {}", info.rank),
        ));
    }
    let (shape, strides) = (layout.shape(), layout.strides());
    let v = info.vector;
    if v > 1 && layout.numel() > 0 {
        let last = info.rank - 1;
        let es = info.elem.size_bytes() as u64;
        let ok = strides[last] == 1
            && shape[last] % v == 0
            && strides[..last].iter().zip(&shape[..last]).all(|(&s, &l)| l == 1 || s % v == 0)
            && (address + layout.offset() as u64 * es).is_multiple_of(v as u64 * es);
        if !ok {
            return Err(bind_error(
                kernel,
                name,
                format!(
                    "shape {shape:?}, strides {strides:?}, offset {}, address {address:#x}",
                    layout.offset()
                ),
                format!(
                    "the kernel reads the last dim in {v}-element vectors: last stride 1, {v} \
                     dividing the last length and every other stride, first element aligned to \
                     {} bytes (build the kernel for this layout: the library ops choose it)",
                    v as u64 * es
                ),
            ));
        }
    }
    if index == ScalarType::I32 {
        let max = i64::from(i32::MAX);
        // the first element's offset goes into the pointer: the kernel indexes from there
        let big = shape.iter().chain(strides).any(|&x| x > max)
            || layout.span_elems() - layout.offset() > max;
        if big {
            return Err(bind_error(
                kernel,
                name,
                format!(
                    "shape {shape:?}, strides {strides:?} ({} elements spanned)",
                    layout.span_elems() - layout.offset()
                ),
                format!("the kernel indexes with 32-bit integers: every length, stride and span at most {max}"),
            ));
        }
    }
    Ok(())
}

impl<'a, B: Backend + ?Sized + 'a> Bindings<'a, B> {
    /// Nothing bound yet.
    ///
    /// ```
    /// use tilekit_ir::{examples, ScalarType};
    /// use tilekit_ops::{backend::Interp, bind::Bindings, compiled::CompiledKernel};
    /// let k = CompiledKernel::new(examples::copy(ScalarType::F32, 4, 64).unwrap());
    /// let e = Bindings::<Interp>::new(&k).finish().unwrap_err().to_string();
    /// assert!(e.contains("`x` is not bound"), "{e}");
    /// ```
    pub fn new(kernel: &'a CompiledKernel) -> Self {
        let n = kernel.kernel().params.len();
        Bindings { kernel, slots: (0..n).map(|_| None).collect() }
    }

    /// The kernel being bound.
    ///
    /// ```
    /// use tilekit_ir::{examples, ScalarType};
    /// use tilekit_ops::{backend::Interp, bind::Bindings, compiled::CompiledKernel};
    /// let k = CompiledKernel::new(examples::copy(ScalarType::F32, 4, 64).unwrap());
    /// assert_eq!(Bindings::<Interp>::new(&k).kernel().kernel().name, "copy");
    /// ```
    pub fn kernel(&self) -> &'a CompiledKernel {
        self.kernel
    }

    fn name(&self) -> &str {
        &self.kernel.kernel().name
    }

    fn tensor_info(&self, name: &str) -> Result<&'a TensorParamInfo> {
        let k = self.kernel.kernel();
        k.tensors.iter().find(|t| t.name == name).ok_or_else(|| {
            let names: Vec<&str> = k.tensors.iter().map(|t| t.name.as_str()).collect();
            bind_error(
                &k.name,
                name,
                "(tensor)",
                format!("the kernel has no tensor parameter `{name}`; its tensors are {names:?}"),
            )
        })
    }

    fn index_type(&self, info: &TensorParamInfo) -> ScalarType {
        match self.kernel.kernel().params.get(info.ptr_param + 1).map(|p| p.kind) {
            Some(ParamKind::Scalar(t)) => t,
            _ => ScalarType::I32,
        }
    }

    fn put_dims(&mut self, info: &TensorParamInfo, layout: &TensorLayout) {
        let r = info.rank;
        for (i, (&l, &s)) in layout.shape().iter().zip(layout.strides()).enumerate() {
            self.slots[info.ptr_param + 1 + i] = Some(Slot::Int(l));
            self.slots[info.ptr_param + 1 + r + i] = Some(Slot::Int(s));
        }
    }

    /// Binds tensor parameter `name` to `t`, which the kernel reads.
    ///
    /// ```
    /// use tilekit_ir::{tensor::HostTensor, ScalarType};
    /// use tilekit_ops::{backend::Interp, bind::Bindings, compiled::CompiledKernel, copy};
    /// let k = CompiledKernel::new(copy::build(ScalarType::F32, 4, 4).unwrap());
    /// let x = HostTensor::from_slice(&[1.0f32; 8], &[2, 4]).unwrap();
    /// let e = Bindings::<Interp>::new(&k).input("x", &x, &Interp).unwrap_err().to_string();
    /// assert!(e.contains("rank 3"), "{e}"); // copy takes (batch, rows, cols)
    /// ```
    pub fn input<T: TensorIn<B> + ?Sized>(
        mut self,
        name: &str,
        t: &'a T,
        b: &'a B,
    ) -> Result<Self> {
        let info = self.tensor_info(name)?;
        let layout = t.layout();
        check_tensor(self.name(), info, self.index_type(info), layout, t.base_address())?;
        let mem = t.bind_in(b)?;
        self.put_dims(info, layout);
        self.slots[info.ptr_param] =
            Some(Slot::In { mem, offset: layout.offset(), elem: layout.dtype() });
        Ok(self)
    }

    /// Binds tensor parameter `name` to `t`, which the kernel writes.
    ///
    /// ```
    /// use tilekit_ir::{tensor::HostTensor, ScalarType};
    /// use tilekit_ops::{backend::Interp, bind::Bindings, compiled::CompiledKernel, copy};
    /// let k = CompiledKernel::new(copy::build(ScalarType::F32, 1, 1).unwrap());
    /// let mut y = HostTensor::from_slice(&[0i32; 8], &[1, 2, 4]).unwrap();
    /// let e = Bindings::<Interp>::new(&k).output("y", &mut y, &Interp).unwrap_err().to_string();
    /// assert!(e.contains("built for f32"), "{e}");
    /// ```
    pub fn output<T: TensorOut<B> + ?Sized>(
        mut self,
        name: &str,
        t: &'a mut T,
        b: &'a B,
    ) -> Result<Self> {
        let info = self.tensor_info(name)?;
        let layout = t.layout();
        check_tensor(self.name(), info, self.index_type(info), layout, t.base_address())?;
        // lengths and strides first: the layout is borrowed from `t`, which binds mutably next
        self.put_dims(info, layout);
        let (offset, elem) = (layout.offset(), layout.dtype());
        let mem = t.bind_out(b)?;
        self.slots[info.ptr_param] = Some(Slot::Out { mem, offset, elem });
        Ok(self)
    }

    fn ptr_param(&self, name: &str, t: &TensorLayout, min_elems: Option<i64>) -> Result<usize> {
        let k = self.kernel.kernel();
        let (i, elem) = k
            .params
            .iter()
            .enumerate()
            .find_map(|(i, p)| match p.kind {
                ParamKind::GlobalPtr(e) if p.name == name => Some((i, e)),
                _ => None,
            })
            .ok_or_else(|| {
                bind_error(
                    &k.name,
                    name,
                    "(pointer)",
                    format!("the kernel has no pointer parameter `{name}`"),
                )
            })?;
        if t.dtype() != elem {
            return Err(bind_error(
                &k.name,
                name,
                t.dtype(),
                format!("the kernel was built for {elem} elements"),
            ));
        }
        if let Some(min_elems) = min_elems {
            if min_elems > i64::from(i32::MAX) {
                // a raw pointer carries no index type: the kernel addresses it with the 32-bit
                // integers of its own layout, which would wrap past this
                return Err(bind_error(
                    &k.name,
                    name,
                    format!("{min_elems} elements"),
                    format!(
                        "the kernel indexes this buffer with 32-bit integers: at most {} elements",
                        i32::MAX
                    ),
                ));
            }
            if !t.is_contiguous() || t.numel() < min_elems {
                return Err(bind_error(
                    &k.name,
                    name,
                    format!("shape {:?}, strides {:?}", t.shape(), t.strides()),
                    format!("a raw pointer parameter takes a contiguous tensor of at least {min_elems} elements"),
                ));
            }
        }
        Ok(i)
    }

    /// Binds raw pointer parameter `name` (no lengths or strides: the kernel's own layout
    /// addresses it) to a contiguous tensor of at least `min_elems` elements the kernel reads.
    ///
    /// ```
    /// use tilekit_ir::{examples, tensor::HostTensor, ScalarType};
    /// use tilekit_ops::{backend::Interp, bind::Bindings, compiled::CompiledKernel};
    /// let k = CompiledKernel::new(examples::copy(ScalarType::F32, 4, 64).unwrap());
    /// let x = HostTensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    /// assert!(Bindings::<Interp>::new(&k).input_ptr("x", &x, 2, &Interp).is_ok());
    /// assert!(Bindings::<Interp>::new(&k).input_ptr("x", &x, 3, &Interp).is_err()); // too short
    /// ```
    pub fn input_ptr<T: TensorIn<B> + ?Sized>(
        mut self,
        name: &str,
        t: &'a T,
        min_elems: i64,
        b: &'a B,
    ) -> Result<Self> {
        let layout = t.layout();
        let i = self.ptr_param(name, layout, Some(min_elems))?;
        let mem = t.bind_in(b)?;
        self.slots[i] = Some(Slot::In { mem, offset: layout.offset(), elem: layout.dtype() });
        Ok(self)
    }

    /// Binds raw pointer parameter `name` to the first element of `t` — a tensor of any
    /// layout, a view included — and tensor-map parameter `map` to `t`'s dims and strides
    /// ([`map_arg`]): a kernel that reads `t` only through TMA copies of that map.
    ///
    /// ```
    /// use tilekit_ir::{tensor::HostTensor, KernelBuilder, ScalarType};
    /// use tilekit_ir::tma::{OobFill, TensorMapSpec, TmaSwizzle};
    /// use tilekit_ops::{backend::Interp, bind::Bindings, compiled::CompiledKernel};
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// let x = b.ptr_param("x", ScalarType::F32).unwrap();
    /// let spec = TensorMapSpec::new(ScalarType::F32, &[8, 8], TmaSwizzle::None, OobFill::Zero).unwrap();
    /// b.tensor_map_param("xm", x, spec).unwrap();
    /// let k = CompiledKernel::new(b.finish().unwrap());
    /// let t = HostTensor::from_slice(&[0.0f32; 16 * 12], &[16, 12]).unwrap();
    /// let view = t.narrow(1, 4, 8).unwrap();           // rows of 8 at a stride of 12
    /// assert!(Bindings::<Interp>::new(&k).input_mapped("x", "xm", &view, &Interp).is_ok());
    /// let odd = t.narrow(1, 2, 8).unwrap();            // starts 8 bytes in
    /// let e = Bindings::<Interp>::new(&k).input_mapped("x", "xm", &odd, &Interp).unwrap_err();
    /// assert!(e.to_string().contains("16-byte boundary"), "{e}");
    /// ```
    pub fn input_mapped<T: TensorIn<B> + ?Sized>(
        self,
        name: &str,
        map: &str,
        t: &'a T,
        b: &'a B,
    ) -> Result<Self> {
        let identity: Vec<usize> = (0..t.layout().rank()).collect();
        self.input_mapped_permuted(name, map, t, &identity, b)
    }

    /// [`input_mapped`](Self::input_mapped) with the map over `t`'s dims permuted: dim `i` of
    /// the map is dim `perm[i]` of `t`. A `K × N` view with strides `(1, ldb)` — the transpose
    /// of an `N × K` row-major matrix — is read as that `N × K` matrix with `perm = [1, 0]`.
    ///
    /// ```
    /// use tilekit_ir::{tensor::HostTensor, KernelBuilder, ScalarType};
    /// use tilekit_ir::tma::{OobFill, TensorMapSpec, TmaSwizzle};
    /// use tilekit_ops::{backend::Interp, bind::Bindings, compiled::CompiledKernel};
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// let x = b.ptr_param("x", ScalarType::F32).unwrap();
    /// let spec = TensorMapSpec::new(ScalarType::F32, &[8, 8], TmaSwizzle::None, OobFill::Zero).unwrap();
    /// b.tensor_map_param("xm", x, spec).unwrap();
    /// let k = CompiledKernel::new(b.finish().unwrap());
    /// let t = HostTensor::from_slice(&[0.0f32; 16 * 12], &[16, 12]).unwrap();
    /// let view = t.transpose(0, 1).unwrap();            // 12 × 16, strides (1, 12)
    /// assert!(Bindings::<Interp>::new(&k).input_mapped("x", "xm", &view, &Interp).is_err());
    /// assert!(Bindings::<Interp>::new(&k).input_mapped_permuted("x", "xm", &view, &[1, 0], &Interp).is_ok());
    /// ```
    pub fn input_mapped_permuted<T: TensorIn<B> + ?Sized>(
        mut self,
        name: &str,
        map: &str,
        t: &'a T,
        perm: &[usize],
        b: &'a B,
    ) -> Result<Self> {
        let permuted = t.layout().permute(perm)?;
        let layout = &permuted;
        let i = self.ptr_param(name, layout, None)?;
        // TMA reads from a 16-byte aligned global address
        let first = t.base_address() + layout.offset() as u64 * layout.dtype().size_bytes() as u64;
        if !first.is_multiple_of(16) {
            let k = self.kernel.kernel();
            return Err(bind_error(
                &k.name,
                name,
                format!("first element at byte {first} (offset {})", layout.offset()),
                "a tensor read through a tensor map starts on a 16-byte boundary".into(),
            ));
        }
        let arg = map_arg(layout)?;
        let mem = t.bind_in(b)?;
        self.slots[i] = Some(Slot::In { mem, offset: layout.offset(), elem: layout.dtype() });
        self.tensor_map(map, arg)
    }

    /// Binds raw pointer parameter `name` to a contiguous tensor of at least `min_elems`
    /// elements the kernel writes.
    ///
    /// ```
    /// use tilekit_ir::{examples, tensor::HostTensor, ScalarType};
    /// use tilekit_ops::{backend::Interp, bind::Bindings, compiled::CompiledKernel};
    /// let k = CompiledKernel::new(examples::copy(ScalarType::F32, 4, 64).unwrap());
    /// let mut y = HostTensor::from_slice(&[0.0f32; 4], &[2, 2]).unwrap();
    /// assert!(Bindings::<Interp>::new(&k).output_ptr("y", &mut y.transpose(0, 1).unwrap(), 4, &Interp).is_err()); // not contiguous
    /// assert!(Bindings::<Interp>::new(&k).output_ptr("y", &mut y, 4, &Interp).is_ok());
    /// ```
    pub fn output_ptr<T: TensorOut<B> + ?Sized>(
        mut self,
        name: &str,
        t: &'a mut T,
        min_elems: i64,
        b: &'a B,
    ) -> Result<Self> {
        let layout = t.layout();
        let i = self.ptr_param(name, layout, Some(min_elems))?;
        let (offset, elem) = (layout.offset(), layout.dtype());
        let mem = t.bind_out(b)?;
        self.slots[i] = Some(Slot::Out { mem, offset, elem });
        Ok(self)
    }

    fn scalar_param(&self, name: &str) -> Result<(usize, ScalarType)> {
        let k = self.kernel.kernel();
        k.params
            .iter()
            .enumerate()
            .find_map(|(i, p)| match p.kind {
                ParamKind::Scalar(t) if p.name == name => Some((i, t)),
                _ => None,
            })
            .ok_or_else(|| {
                bind_error(
                    &k.name,
                    name,
                    "(scalar)",
                    format!("the kernel has no scalar parameter `{name}`"),
                )
            })
    }

    /// Binds integer parameter `name`, checked against its type's range.
    ///
    /// ```
    /// use tilekit_ir::{examples, ScalarType};
    /// use tilekit_ops::{backend::Interp, bind::Bindings, compiled::CompiledKernel};
    /// let k = CompiledKernel::new(examples::copy(ScalarType::F32, 4, 64).unwrap());
    /// assert!(Bindings::<Interp>::new(&k).int("n", 5).is_ok());
    /// let e = Bindings::<Interp>::new(&k).int("n", 1 << 40).unwrap_err().to_string();
    /// assert!(e.contains("`n` = 1099511627776"), "{e}");
    /// ```
    pub fn int(mut self, name: &str, v: i64) -> Result<Self> {
        let (i, t) = self.scalar_param(name)?;
        let ok = match t {
            ScalarType::I32 => i32::try_from(v).is_ok(),
            ScalarType::U32 => u32::try_from(v).is_ok(),
            ScalarType::I64 => true,
            _ => false,
        };
        if !ok {
            return Err(bind_error(self.name(), name, v, format!("the parameter is {t}")));
        }
        self.slots[i] = Some(Slot::Int(v));
        Ok(self)
    }

    /// Binds a typed scalar parameter (an `f32` scale, say).
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, Lit, ScalarType};
    /// use tilekit_ops::{backend::Interp, bind::Bindings, compiled::CompiledKernel};
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// let s = b.scalar_param("scale", ScalarType::F32).unwrap();
    /// b.keep(&s);
    /// let k = CompiledKernel::new(b.finish().unwrap());
    /// assert!(Bindings::<Interp>::new(&k).scalar("scale", Lit::f32(2.0)).unwrap().finish().is_ok());
    /// assert!(Bindings::<Interp>::new(&k).scalar("scale", Lit::int(ScalarType::I32, 2).unwrap()).is_err());
    /// ```
    pub fn scalar(mut self, name: &str, v: Lit) -> Result<Self> {
        let (i, t) = self.scalar_param(name)?;
        if v.ty() != t {
            return Err(bind_error(
                self.name(),
                name,
                format!("{v:?}"),
                format!("the parameter is {t}"),
            ));
        }
        self.slots[i] = Some(Slot::Scalar(v));
        Ok(self)
    }

    /// Binds tensor-map parameter `name` to the dims and byte strides of the tensor it views
    /// (see [`map_arg`]), checked against the driver's rules first.
    ///
    /// ```
    /// use tilekit_ir::{KernelBuilder, ScalarType, tensor::TensorLayout, tma::*};
    /// use tilekit_ops::{backend::Interp, bind::{map_arg, Bindings}, compiled::CompiledKernel};
    /// let b = KernelBuilder::new("k", [32, 1, 1]).unwrap();
    /// let x = b.ptr_param("x", ScalarType::F32).unwrap();
    /// let spec = TensorMapSpec::new(ScalarType::F32, &[8, 8], TmaSwizzle::None, OobFill::Zero).unwrap();
    /// b.tensor_map_param("xm", x, spec).unwrap();
    /// let k = CompiledKernel::new(b.finish().unwrap());
    /// let l = TensorLayout::contiguous(ScalarType::F32, vec![10, 12]).unwrap();
    /// assert!(Bindings::<Interp>::new(&k).tensor_map("xm", map_arg(&l).unwrap()).is_ok());
    /// let odd = TensorLayout::contiguous(ScalarType::F32, vec![10, 7]).unwrap(); // rows of 28 bytes
    /// let e = Bindings::<Interp>::new(&k).tensor_map("xm", map_arg(&odd).unwrap()).unwrap_err();
    /// assert!(e.to_string().contains("byte stride of dim 1 = 28"), "{e}");
    /// ```
    pub fn tensor_map(mut self, name: &str, arg: TensorMapArg) -> Result<Self> {
        let k = self.kernel.kernel();
        let found = k.params.iter().enumerate().find_map(|(i, p)| match p.kind {
            ParamKind::TensorMap { spec, .. } if p.name == name => Some((i, spec)),
            _ => None,
        });
        let Some((i, spec)) = found else {
            return Err(bind_error(
                &k.name,
                name,
                "(tensor map)",
                format!("the kernel has no tensor-map parameter `{name}`"),
            ));
        };
        // the address is checked when the backend encodes the map
        tilekit_ir::tma::check_encode(&spec, &arg, 0).map_err(|e| {
            bind_error(&k.name, name, format!("dims {:?}", arg.dims()), e.to_string())
        })?;
        self.slots[i] = Some(Slot::TensorMap(arg));
        Ok(self)
    }

    /// All slots in parameter order; the first unbound parameter is an error.
    ///
    /// ```
    /// use tilekit_ir::{examples, ScalarType};
    /// use tilekit_ops::{backend::Interp, bind::Bindings, compiled::CompiledKernel};
    /// let k = CompiledKernel::new(examples::copy(ScalarType::F32, 4, 64).unwrap());
    /// assert!(Bindings::<Interp>::new(&k).int("n", 3).unwrap().finish().is_err()); // x, y unbound
    /// ```
    pub fn finish(self) -> Result<Vec<Slot<'a, B>>> {
        let k = self.kernel.kernel();
        let mut out = Vec::with_capacity(self.slots.len());
        for (i, s) in self.slots.into_iter().enumerate() {
            match s {
                Some(s) => out.push(s),
                None => {
                    let p = &k.params[i].name;
                    return Err(bind_error(
                        &k.name,
                        p,
                        "(nothing)",
                        format!("parameter #{i} `{p}` is not bound"),
                    ));
                }
            }
        }
        Ok(out)
    }
}
