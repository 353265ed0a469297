//! # 04 — swizzles and what they buy: Morton codes, tiled Morton images, Hopper's XOR swizzles,
//! and shared-memory bank conflicts
//!
//! ```text
//!   Morton 4×4 (z of each cell)     128-byte swizzle (16-byte chunk stored at each position)
//!    0  1  4  5                       row 0: 0 1 2 3 4 5 6 7
//!    2  3  6  7                       row 1: 1 0 3 2 5 4 7 6     chunk' = chunk ⊕ (row mod 8)
//!    8  9 12 13                       …
//!   10 11 14 15
//! ```
//!
//! 1. Morton encode/decode and the design documents' 4×4 table.
//! 2. A 5×7 image in 4×4 tiled Morton storage: the padding rule (the image is padded up to whole
//!    tiles, 8×8 = 64 storage elements; padding never reaches the unswizzled image).
//! 3. Hopper's 32/64/128-byte swizzles as chunk tables (from their descriptors).
//! 4. The bank model on column reads: row-major vs padded vs swizzled shared-memory tiles.
//!
//! Run: `cargo run --example 04_swizzle`

use tilekit::layout::morton;
use tilekit::layout::swizzle::{HopperSwizzle, TiledMorton};
use tilekit::tile::analysis::requests::{summarize, tile_requests, SmemLayout, WarpPattern};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 1. Morton codes
    println!(
        "1. Morton (Z-order): encode2(y, x) interleaves x on the even bits, y on the odd bits"
    );
    let (y, x) = (3u32, 5u32);
    let z = morton::encode2(y, x);
    println!("   encode2({y}, {x}) = {z} (0b{z:b}), decode2({z}) = {:?}", morton::decode2(z));
    println!("   the documents' 4×4 table:");
    for y in 0..4 {
        let row: Vec<String> = (0..4).map(|x| format!("{:>3}", morton::encode2(y, x))).collect();
        println!("   {}", row.join(""));
    }

    // 2. Tiled Morton image with padding
    let (h, w, t) = (5, 7, 4);
    let tm = TiledMorton::new(h, w, t)?;
    let image: Vec<i32> = (0..(h * w) as i32).collect();
    let storage = tm.swizzle(&image, -1)?;
    println!(
        "\n2. a {h}×{w} image in {t}×{t} Morton tiles: padded up to {}×{} tiles = {} storage elements \
         (-1 = padding)",
        tm.tiles_h(),
        tm.tiles_w(),
        tm.storage_len()
    );
    for (k, tile) in storage.chunks((t * t) as usize).enumerate() {
        let cells: Vec<String> = tile.iter().map(|v| format!("{v:>3}")).collect();
        println!("   tile {k} (z order): {}", cells.join(""));
    }
    let back = tm.unswizzle(&storage)?;
    println!("   unswizzle(swizzle(image)) == image: {}", back == image);
    let d = tm.descriptor()?;
    let agree =
        (0..h).all(|r| (0..w).all(|c| d.calculate_offset(&[r, c]).unwrap() == tm.offset(r, c)));
    println!("   the descriptor (transforms only) agrees with the bit formula: {agree}");

    // 3. Hopper swizzles as chunk tables
    println!(
        "\n3. Hopper swizzles: which 16-byte chunk of its row each logical chunk is stored in"
    );
    for mode in [HopperSwizzle::B32, HopperSwizzle::B64, HopperSwizzle::B128] {
        let cols = mode.row_bytes() / 2; // fp16
        let rows = 1024 / mode.row_bytes();
        let d = mode.descriptor(rows, cols, 2)?;
        // bits 4.. of the address ⊕= bits 7..: the pattern repeats every 8 rows in all modes
        println!(
            "   {}-byte swizzle, rows of {cols} fp16 (rows 0..8; the pattern repeats):",
            mode.row_bytes()
        );
        for r in 0..8 {
            let chunks: Vec<String> = (0..cols / 8)
                .map(|c| ((d.calculate_offset(&[r, 8 * c]).unwrap() - r * cols) / 8).to_string())
                .collect();
            println!("     row {r}: {}", chunks.join(" "));
        }
    }

    // 4. Bank conflicts of column reads
    println!("\n4. bank conflicts of a warp walking a shared-memory tile (wavefronts over the whole tile)");
    println!(
        "   {:<44} {:<12} {:>10} {:>6} {:>6}",
        "tile / walk", "layout", "wavefronts", "ideal", "worst"
    );
    let cases: [(i64, i64, i64, WarpPattern, &[SmemLayout]); 3] = [
        (
            32,
            32,
            4,
            WarpPattern::Col,
            &[SmemLayout::RowMajor, SmemLayout::Padded(1), SmemLayout::Morton],
        ),
        (
            32,
            32,
            4,
            WarpPattern::ColVec(4),
            &[SmemLayout::RowMajor, SmemLayout::Padded(4), SmemLayout::Swizzle128],
        ),
        (
            64,
            64,
            2,
            WarpPattern::ColVec(8),
            &[SmemLayout::RowMajor, SmemLayout::Padded(8), SmemLayout::Swizzle128],
        ),
    ];
    for (rows, cols, bytes, walk, layouts) in cases {
        let dtype = if bytes == 4 { "fp32" } else { "fp16" };
        let what = format!("{rows}×{cols} {dtype}, {walk} (lanes down a column)");
        for &layout in layouts {
            let d = layout.descriptor(rows, cols, bytes)?;
            let s = summarize(&tile_requests(&d, bytes as u32, walk)?)?;
            println!(
                "   {what:<44} {:<12} {:>10} {:>6} {:>5}-way",
                layout.to_string(),
                s.transactions,
                s.ideal_transactions,
                s.worst_conflict
            );
        }
    }
    println!("   (`tilekit banks --layout L --tile RxC --dtype D --access W` prints heat maps)");
    Ok(())
}
