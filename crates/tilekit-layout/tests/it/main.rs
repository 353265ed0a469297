//! Every integration test of `tilekit-layout` in one binary (one link, one set of debug info):
//! a module per source file it tests, the shared helpers beside them.

mod adaptor;
mod coordinate;
mod descriptor;
mod idx;
mod morton;
mod sfc;
mod swizzle;
mod transform;
