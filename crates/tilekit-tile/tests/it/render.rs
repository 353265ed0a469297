//! Rendering at any size: explaining costs time in proportion to the encoding, and what
//! enumerates the tile (ownership, text map, picture) is capped with a note or a typed error.

use std::time::Instant;

use tilekit_tile::encoding_text::parse_encoding;
use tilekit_tile::render::{
    explain, ownership_map, ownership_map_of, ownership_svg, thread_colour, vector_access, Dtype,
    Ownership, MAP_MAX_ELEMENTS, OWNERSHIP_MAX, SVG_MAX_ELEMENTS,
};
use tilekit_tile::TileDistribution;

fn dist(text: &str) -> TileDistribution {
    TileDistribution::from_spec(parse_encoding(text).unwrap()).unwrap()
}

#[test]
fn huge_tiles_are_explained_without_being_enumerated() {
    let start = Instant::now();
    let d = dist("H[[3000000000,2],[4,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]");
    let text = explain(&d);
    assert!(text.contains("tile 6000000000×16 over 12000000000 threads"));
    assert!(text.contains("threads per block: 12000000000; thread = 4·p0 + p1"));
    let v = vector_access(&d, Dtype::Fp32);
    assert_eq!((v.vector_dim_y, v.scalar_per_vector, v.num_access), (1, 4, 2));
    assert_eq!(
        ownership_map_of(&d),
        format!(
            "ownership map omitted: the tile has 96000000000 elements, the text map is printed \
             up to {MAP_MAX_ELEMENTS} (draw tiles of up to {SVG_MAX_ELEMENTS} with --svg)\n"
        )
    );
    assert!(Ownership::of(&d).is_err());
    assert!(ownership_svg(&d, Dtype::Fp32).is_err());
    // nothing was enumerated: this is instant (the map of 2^36 elements would take hours)
    assert!(start.elapsed().as_secs() < 5, "{:?}", start.elapsed());
}

#[test]
fn ownership_is_capped_by_elements_and_by_holders() {
    // 2048 elements, but 2^20 replicas each: 2^31 (thread, d) pairs
    let d = dist("R[1048576] H[[32],[64]] P[[R0,X0.0]] Y[X1.0]");
    let e = Ownership::of(&d).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "ownership map: tile = \"32×64 = 2048 elements, 33554432 threads × 64 values\" is \
             invalid: the map is evaluated for up to {OWNERSHIP_MAX} elements and (thread, d) pairs"
        )
    );
    // small enough to print, too many holders to evaluate: a note
    assert_eq!(
        ownership_map_of(&d),
        "ownership map omitted: the tile's 2048 elements have 2147483648 (thread, d) holders; \
         the map is evaluated for up to 1048576\n"
    );
    // exactly at the cap: evaluated, every element held once
    let d = dist("H[[1024],[1024]] P[[X0.0]] Y[X1.0]");
    let own = Ownership::of(&d).unwrap();
    assert_eq!(own.owners.len() as i64, OWNERSHIP_MAX);
    assert!(own.owners.iter().all(|o| o.len() == 1));
    assert!(ownership_map(&own).starts_with("ownership map omitted: the tile has 1048576 elements"));
}

#[test]
fn pictures_are_drawn_up_to_the_cap() {
    let d = dist("H[[128,2],[64,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]"); // 256×256, 8192 threads
    let doc = ownership_svg(&d, Dtype::Fp32).unwrap();
    assert_eq!(doc.matches("class=\"cell\"").count(), SVG_MAX_ELEMENTS as usize);
    // 128 P0 groups: the legend lists 32 and summarises the rest in one line
    assert!(doc.contains(">P0 = 31<") && !doc.contains(">P0 = 32<"));
    assert!(doc.contains(">… 96 more P0 values<"), "legend");
    let d = dist("H[[128,2],[128,4]] P[[X0.0],[X1.0]] Y[X0.1,X1.1]"); // 256×512
    assert!(ownership_svg(&d, Dtype::Fp32)
        .unwrap_err()
        .to_string()
        .contains("it has 131072 elements; pictures are drawn for up to 65536"));
}

#[test]
fn thread_colours_of_absurd_p_lengths_do_not_overflow() {
    // the product of the P lengths does not fit in i64: treated as "many threads"
    let c = thread_colour(5, &[1 << 40, 1 << 40]);
    assert!(c.starts_with("hsl("), "{c}");
    assert_eq!(thread_colour(1, &[2, 4]), "hsl(45, 70%, 72%)");
}
