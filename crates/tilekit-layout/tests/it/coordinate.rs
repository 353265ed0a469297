//! Moves equal fresh coordinates: random walks over descriptors built with every transform.

use proptest::prelude::*;
use tilekit_layout::{Coordinate, TensorDescriptor, Transform};

/// One descriptor per transform kind, each on top of a naive or packed base, with random
/// parameters. The last one chains several stages (xor, merge, pad) together.
fn descriptors() -> impl Strategy<Value = TensorDescriptor<i64>> {
    let len = 1i64..7;
    prop_oneof![
        // pass_through + embed
        (len.clone(), len.clone(), 1i64..9).prop_map(|(a, b, s)| {
            TensorDescriptor::naive(vec![a, b], vec![b + s, 1], None)
                .unwrap()
                .transform(
                    vec![Transform::pass_through(a).unwrap(), Transform::pass_through(b).unwrap()],
                    vec![vec![0], vec![1]],
                    vec![vec![1], vec![0]],
                )
                .unwrap()
        }),
        // two-sided pad
        (len.clone(), len.clone(), 0i64..3, 0i64..3).prop_map(|(a, b, l, r)| {
            TensorDescriptor::packed(vec![a, b], None)
                .unwrap()
                .transform(
                    vec![
                        Transform::pad(a, l, r, false).unwrap(),
                        Transform::pad(b, r, l, false).unwrap(),
                    ],
                    vec![vec![0], vec![1]],
                    vec![vec![0], vec![1]],
                )
                .unwrap()
        }),
        // left and right pad
        (len.clone(), len.clone(), 0i64..4, 0i64..4).prop_map(|(a, b, l, r)| {
            TensorDescriptor::packed(vec![a, b], None)
                .unwrap()
                .transform(
                    vec![
                        Transform::left_pad(a, l, false).unwrap(),
                        Transform::right_pad(b, r, false).unwrap(),
                    ],
                    vec![vec![0], vec![1]],
                    vec![vec![0], vec![1]],
                )
                .unwrap()
        }),
        // merge (both variants) of a 3-D packed tensor
        (len.clone(), len.clone(), len.clone(), any::<bool>()).prop_map(|(a, b, c, v3)| {
            let v = if v3 {
                tilekit_layout::transform::MergeVariant::DivisionMod
            } else {
                tilekit_layout::transform::MergeVariant::MagicDivision
            };
            TensorDescriptor::packed(vec![a, b, c], None)
                .unwrap()
                .transform(
                    vec![
                        Transform::merge_variant(vec![a, b], v).unwrap(),
                        Transform::pass_through(c).unwrap(),
                    ],
                    vec![vec![0, 1], vec![2]],
                    vec![vec![0], vec![1]],
                )
                .unwrap()
        }),
        // unmerge then embed
        (len.clone(), len.clone(), len.clone()).prop_map(|(a, b, c)| {
            TensorDescriptor::packed(vec![a * b, c], None)
                .unwrap()
                .transform(
                    vec![
                        Transform::unmerge(vec![a, b]).unwrap(),
                        Transform::embed(vec![c], vec![1]).unwrap(),
                    ],
                    vec![vec![0], vec![1]],
                    vec![vec![0, 1], vec![2]],
                )
                .unwrap()
        }),
        // freeze + insert + replicate + slice + offset
        (2i64..7, len.clone(), 0i64..3).prop_map(|(a, b, o)| {
            TensorDescriptor::packed(vec![a, b + o + 2], None)
                .unwrap()
                .transform(
                    vec![
                        Transform::freeze(a - 1).unwrap(),
                        Transform::slice(o, o + b).unwrap(),
                        Transform::insert(3).unwrap(),
                        Transform::replicate(vec![2]).unwrap(),
                    ],
                    vec![vec![0], vec![1], vec![], vec![]],
                    vec![vec![], vec![0], vec![1], vec![2]],
                )
                .unwrap()
                .transform(
                    vec![
                        Transform::offset(b, 1).unwrap(),
                        Transform::pass_through(3).unwrap(),
                        Transform::pass_through(2).unwrap(),
                    ],
                    vec![vec![0], vec![1], vec![2]],
                    vec![vec![0], vec![1], vec![2]],
                )
                .unwrap()
        }),
        // modulo (moves work in tilekit)
        (len.clone(), 1i64..20).prop_map(|(m, up)| {
            TensorDescriptor::packed(vec![m], None)
                .unwrap()
                .transform(vec![Transform::modulo(m, up).unwrap()], vec![vec![0]], vec![vec![0]])
                .unwrap()
        }),
        // xor (power-of-two and not) then merge then pad: a 4-stage chain
        (
            prop_oneof![Just(4i64), Just(6), Just(8)],
            prop_oneof![Just(4i64), Just(6), Just(8)],
            0i64..3
        )
            .prop_map(|(a, b, p)| {
                TensorDescriptor::naive(vec![a, b], vec![b, 1], Some((2, 1)))
                    .unwrap()
                    .transform(
                        vec![Transform::xor(a, b).unwrap()],
                        vec![vec![0, 1]],
                        vec![vec![0, 1]],
                    )
                    .unwrap()
                    .transform(
                        vec![Transform::merge(vec![a, b]).unwrap()],
                        vec![vec![0, 1]],
                        vec![vec![0]],
                    )
                    .unwrap()
                    .transform(
                        vec![Transform::right_pad(a * b, p, false).unwrap()],
                        vec![vec![0]],
                        vec![vec![0]],
                    )
                    .unwrap()
            }),
        // indexing (gather)
        proptest::collection::vec(0i64..50, 1..9).prop_map(|table| {
            let n = table.len() as i64;
            TensorDescriptor::packed(vec![50], None)
                .unwrap()
                .transform(vec![Transform::indexing(table).unwrap()], vec![vec![0]], vec![vec![0]])
                .unwrap()
                .transform(vec![Transform::pass_through(n).unwrap()], vec![vec![0]], vec![vec![0]])
                .unwrap()
        }),
    ]
}

fn point(lengths: &[i64], seed: &[u32]) -> Vec<i64> {
    lengths.iter().zip(seed.iter().cycle()).map(|(l, s)| i64::from(*s) % l).collect()
}

proptest! {
    #[test]
    fn move_equals_fresh(desc in descriptors(), seeds in proptest::collection::vec(proptest::collection::vec(any::<u32>(), 4), 2..12)) {
        let lengths = desc.lengths();
        let mut at = point(&lengths, &seeds[0]);
        let mut c = Coordinate::new_descriptor(&desc, &at).unwrap();
        for s in &seeds[1..] {
            let to = point(&lengths, s);
            let step: Vec<i64> = to.iter().zip(&at).map(|(a, b)| a - b).collect();
            desc.move_coordinate(&mut c, &step).unwrap();
            let fresh = Coordinate::new_descriptor(&desc, &to).unwrap();
            prop_assert_eq!(c.top(), to.clone());
            prop_assert_eq!(c.offset(), desc.calculate_offset(&to).unwrap());
            prop_assert_eq!(c.hidden(), fresh.hidden());
            prop_assert_eq!(desc.is_valid_assuming_top_valid(&c).unwrap(), desc.is_valid_assuming_top_valid(&fresh).unwrap());
            at = to;
        }
    }

    /// The brute-force reference for validity: a padded element is valid iff its unpadded index
    /// lies inside the original tensor.
    #[test]
    fn pad_validity_matches_brute_force(a in 1i64..6, b in 1i64..6, l in 0i64..3, r in 0i64..3) {
        let d = TensorDescriptor::packed(vec![a, b], None).unwrap()
            .transform(vec![Transform::pad(a, l, r, false).unwrap(), Transform::right_pad(b, r, false).unwrap()],
                       vec![vec![0], vec![1]], vec![vec![0], vec![1]]).unwrap();
        for i in 0..a + l + r {
            for j in 0..b + r {
                let c = Coordinate::new_descriptor(&d, &[i, j]).unwrap();
                let inside = (l..a + l).contains(&i) && j < b;
                prop_assert_eq!(d.is_valid_assuming_top_valid(&c).unwrap(), inside);
                if inside {
                    prop_assert_eq!(c.offset(), (i - l) * b + j);
                }
            }
        }
    }
}

#[test]
fn judge_do_transforms_leaves_untouched_stages_alone() {
    // A move along dim 1 only must not run the stage of dim 0: its hidden slot keeps the value
    // the fresh coordinate gave it.
    let d = TensorDescriptor::naive(vec![4i64, 6], vec![6, 1], None).unwrap();
    let mut c = Coordinate::new_descriptor(&d, &[2, 1]).unwrap();
    d.move_coordinate(&mut c, &[0, 3]).unwrap();
    assert_eq!(c.hidden(), &[16, 2, 4]);
}

#[test]
fn coordinates_steps_and_foreign_coordinates_are_checked() {
    use tilekit_layout::LayoutError;
    let d = TensorDescriptor::naive(vec![4i64, 6], vec![6, 1], None).unwrap();
    assert!(matches!(
        Coordinate::new_descriptor(&d, &[1]),
        Err(LayoutError::CountMismatch { got: 1, .. })
    ));
    let mut c = Coordinate::new_descriptor(&d, &[1, 2]).unwrap();
    // a step of the wrong rank: an error, and the coordinate is unchanged
    assert!(d.move_coordinate(&mut c, &[1]).is_err());
    assert_eq!((c.top(), c.offset()), (vec![1, 2], 8));
    d.move_coordinate(&mut c, &[1, 1]).unwrap();
    assert_eq!((c.top(), c.offset()), (vec![2, 3], 15));
    // a coordinate of another descriptor (3 hidden dims vs 2): refused everywhere
    let other = TensorDescriptor::packed(vec![2i64, 3, 4], None).unwrap();
    let mut foreign = Coordinate::new_descriptor(&other, &[1, 1, 1]).unwrap();
    let e = d.move_coordinate(&mut foreign, &[1, 0]).unwrap_err();
    assert!(e.to_string().starts_with("tensor adaptor: coordinate = "), "{e}");
    assert!(d.is_valid(&foreign).is_err());
    assert!(d.is_valid_assuming_top_valid(&foreign).is_err());
    assert_eq!(foreign.offset(), 17);
}
