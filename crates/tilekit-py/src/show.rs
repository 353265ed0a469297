//! `tilekit.show(encoding, dtype="fp32")`: a tile-distribution encoding in the CLI's text form
//! (`'H[[2,2],[4,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]'`) → its ownership SVG and the words
//! `tilekit show` prints (explanation, vector-access traits, ownership map). No GPU needed.

use pyo3::prelude::*;
use tilekit_tile::encoding_text::parse_encoding;
use tilekit_tile::render::{
    explain, explain_vector_access, ownership_map_of, ownership_svg, vector_access, Dtype,
};
use tilekit_tile::TileDistribution;

use crate::errors::EncodingError;

/// Parses, validates and draws an encoding; every refusal is an EncodingError with the
/// parser's or validator's message.
#[pyfunction]
#[pyo3(signature = (encoding, dtype = "fp32"))]
pub fn show(encoding: &str, dtype: &str) -> PyResult<(String, String)> {
    let dt: Dtype = dtype.parse().map_err(|e| EncodingError::new_err(format!("{e}")))?;
    let spec = parse_encoding(encoding)
        .map_err(|e| EncodingError::new_err(format!("{encoding:?}: {e}")))?;
    let dist = TileDistribution::from_spec(spec)
        .map_err(|e| EncodingError::new_err(format!("{encoding:?}: {e}")))?;
    let svg = ownership_svg(&dist, dt)
        .map_err(|e| EncodingError::new_err(format!("{encoding:?}: {e}")))?;
    let words = format!(
        "{}\n{}\n{}",
        explain(&dist),
        explain_vector_access(&vector_access(&dist, dt)),
        ownership_map_of(&dist)
    );
    Ok((svg, words))
}
