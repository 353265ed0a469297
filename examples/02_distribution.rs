//! # 02 — distributions: the design documents' encodings, repaired, shown and explained
//!
//! The design documents (docs-ck-tile 002) illustrate load/store traits with four encodings:
//! `RowMajorDist` (4×16), `ColMajorDist` (16×4), a 6×8 tile and `OptimizedVector` (8×16). As
//! written they do not compile (SEMANTICS §16): `Ys2RHsMajor = <2, 4>` is read as "Y-space per
//! thread" but holds RH majors (4 is out of range for 2 X dims), and both P lists name the same
//! component `X0.H0`. The repair keeps the documents' H factorisations and intent — P0 on the
//! first H of X0, P1 on the first H of X1, Y0/Y1 on the second H of each — which is exactly the
//! `doc_*_fixed` entries of the conformance vectors.
//!
//! ```text
//!   documents:  P majors [[1],[1]]  minors [[0],[0]]   Y majors [2, 4]  minors [1, 1]
//!   repaired:   P majors [[1],[2]]  minors [[0],[0]]   Y majors [1, 2]  minors [1, 1]
//!               = P[[X0.0],[X1.0]] Y[X0.1,X1.1] in tilekit's text form
//! ```
//!
//! Each repaired encoding is printed in words, with its traits for fp32 and its ownership map;
//! then the literal `RowMajorDist` is built and rejected with the validator's error.
//!
//! Run: `cargo run --example 02_distribution`

use tilekit::tile::encoding::EncodingSpec;
use tilekit::tile::encoding_text::{parse_encoding, print_encoding};
use tilekit::tile::render::{
    explain, explain_vector_access, ownership_map, vector_access, Dtype, Ownership,
};
use tilekit::tile::{TileDistribution, TileError};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let repaired = [
        ("RowMajorDist (4×16)", "H[[2,2],[4,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]"),
        ("ColMajorDist (16×4)", "H[[4,4],[2,2]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]"),
        ("TileDist (6×8)", "H[[2,3],[2,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]"),
        ("OptimizedVector (8×16)", "H[[4,2],[2,8]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]"),
    ];
    for (name, text) in repaired {
        let dist = TileDistribution::from_spec(parse_encoding(text)?)?;
        println!("==== {name}, repaired ====");
        print!("{}", explain(&dist));
        println!();
        print!("{}", explain_vector_access(&vector_access(&dist, Dtype::Fp32)));
        println!();
        print!("{}", ownership_map(&Ownership::of(&dist)?));
        println!();
    }

    // The documents' literal RowMajorDist: the reference fails to compile it; tilekit names why.
    let literal = EncodingSpec {
        rs_lengths: vec![],
        hs_lengthss: vec![vec![2, 2], vec![4, 4]],
        ps_to_rhss_major: vec![vec![1], vec![1]],
        ps_to_rhss_minor: vec![vec![0], vec![0]],
        ys_to_rhs_major: vec![2, 4],
        ys_to_rhs_minor: vec![1, 1],
    };
    println!("==== RowMajorDist as the documents write it ====");
    println!("encoding: {}", print_encoding(&literal));
    match TileDistribution::from_spec(literal) {
        Ok(_) => return Err("the literal RowMajorDist must be rejected".into()),
        Err(e @ TileError::Encoding { .. }) => println!("rejected: {e}"),
        Err(e) => return Err(e.into()),
    }
    Ok(())
}
