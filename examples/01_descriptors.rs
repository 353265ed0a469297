//! # 01 — descriptors: an 8×8 texture as 4×4 tiles, and Morton order
//!
//! The design documents (docs-ck-tile 001) tile an 8×8 row-major texture into 4×4 tiles with two
//! unmerges, and express Morton (Z-order) as unmerge-into-bits followed by a merge of the
//! interleaved bits. This example builds both with tilekit-layout and prints their offsets.
//!
//! Run: `cargo run --example 01_descriptors`

use tilekit::layout::{Coordinate, LayoutError, TensorDescriptor, Transform};

fn main() -> Result<(), LayoutError> {
    // The texture: 8×8 row-major, 4 contiguous texels guaranteed (16 bytes of fp32).
    let texture = TensorDescriptor::naive(vec![8i64, 8], vec![8, 1], Some((4, 1)))?;

    // (row, col) -> (tile_row, in_row) × (tile_col, in_col); top order (tile_row, tile_col,
    // in_row, in_col).
    let tiled = texture.transform(
        vec![Transform::unmerge(vec![2, 4])?, Transform::unmerge(vec![2, 4])?],
        vec![vec![0], vec![1]],
        vec![vec![0, 2], vec![1, 3]],
    )?;
    println!("8×8 texture as 2×2 tiles of 4×4 — offset of every texel, tile by tile:");
    print!("{}", tiled.adaptor().describe());
    for tr in 0..2 {
        for tc in 0..2 {
            println!("tile ({tr}, {tc}):");
            for r in 0..4 {
                let row: Vec<String> = (0..4)
                    .map(|c| format!("{:3}", tiled.calculate_offset(&[tr, tc, r, c]).unwrap()))
                    .collect();
                println!("   {}", row.join(""));
            }
        }
    }
    let (lens, strides) = tiled.top_safe_vector_lengths_strides();
    println!("guaranteed vectors per top dim: lengths {lens:?}, strides {strides:?}\n");

    // Morton: row -> (y2, y1, y0), col -> (x2, x1, x0), merge (y2, x2, y1, x1, y0, x0) -> z.
    let bits = texture.transform(
        vec![Transform::unmerge(vec![2, 2, 2])?, Transform::unmerge(vec![2, 2, 2])?],
        vec![vec![0], vec![1]],
        vec![vec![0, 2, 4], vec![1, 3, 5]],
    )?;
    let morton =
        bits.transform(vec![Transform::merge(vec![2; 6])?], vec![(0..6).collect()], vec![vec![0]])?;
    println!("Morton order: z -> offset (row·8 + col), z = 0..64:");
    for zr in 0..8 {
        let row: Vec<String> = (0..8)
            .map(|k| format!("{:3}", morton.calculate_offset(&[zr * 8 + k]).unwrap()))
            .collect();
        println!("   {}", row.join(""));
    }
    println!("The position of each texel along the Z curve (row-major grid of z):");
    let mut grid = [[0i64; 8]; 8];
    for z in 0..64 {
        let off = morton.calculate_offset(&[z])?;
        grid[(off / 8) as usize][(off % 8) as usize] = z;
    }
    for row in grid {
        println!("   {}", row.iter().map(|z| format!("{z:3}")).collect::<String>());
    }

    // Walking the curve with incremental moves gives the same offsets as fresh coordinates.
    let mut c = Coordinate::new_descriptor(&morton, &[0])?;
    for z in 1..64 {
        morton.move_coordinate(&mut c, &[1])?;
        assert_eq!(c.offset(), morton.calculate_offset(&[z])?);
    }
    println!("moved along all 64 steps: every offset equals a fresh coordinate's");
    Ok(())
}
