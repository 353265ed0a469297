//! Tests of `tilekit_layout::sfc`: properties over random curves (divisible and not, snake on
//! and off) and literal tables from the reference.

use std::ops::{Add, BitXor, Div, Mul, Rem, Sub};

use proptest::prelude::*;
use tilekit_layout::{Idx, IdxBool, LayoutError, SpaceFillingCurve};

// ---------------------------------------------------------------------------------------------
// An independent statement of the rule (SEMANTICS §7 pseudo-code, transcribed literally, with
// ceiling access lengths) to compare the library against.

#[allow(clippy::needless_range_loop)] // index loops, as in the pseudo-code
fn reference_index(
    lengths: &[i64],
    order: &[usize],
    scalars: &[i64],
    snake: bool,
    i: i64,
) -> Vec<i64> {
    let n = lengths.len();
    let access: Vec<i64> = lengths.iter().zip(scalars).map(|(l, s)| (l + s - 1) / s).collect();
    let ordered: Vec<i64> = order.iter().map(|&d| access[d]).collect();
    // digits, o[n-1] fastest
    let mut o = vec![0i64; n];
    let mut rest = i;
    for k in (0..n).rev() {
        o[k] = rest % ordered[k];
        rest /= ordered[k];
    }
    let mut forward = vec![true; n];
    for k in 1..n {
        let mut t = o[0];
        for j in 1..k {
            t = t * ordered[j] + o[j];
        }
        forward[k] = t % 2 == 0;
    }
    let mut idx = vec![0i64; n];
    for k in 0..n {
        let ok = if !snake || forward[k] { o[k] } else { ordered[k] - 1 - o[k] };
        idx[order[k]] = ok * scalars[order[k]];
    }
    idx
}

// ---------------------------------------------------------------------------------------------
// An index domain whose values are never "known now": proves that `index_of` uses only domain
// operations (no `to_const`, no branching on values).

#[derive(Debug, Clone, Copy, PartialEq)]
struct Opaque(i64);
#[derive(Debug, Clone, Copy, PartialEq)]
struct OpaqueBool(bool);

impl IdxBool for OpaqueBool {
    fn lit(v: bool) -> Self {
        OpaqueBool(v)
    }
    fn to_const(&self) -> Option<bool> {
        None
    }
    fn and(&self, o: &Self) -> Self {
        OpaqueBool(self.0 && o.0)
    }
    fn or(&self, o: &Self) -> Self {
        OpaqueBool(self.0 || o.0)
    }
    fn not(&self) -> Self {
        OpaqueBool(!self.0)
    }
}

macro_rules! opaque_op {
    ($tr:ident, $f:ident, $op:tt) => {
        impl $tr for Opaque {
            type Output = Opaque;
            fn $f(self, o: Opaque) -> Opaque {
                Opaque(self.0 $op o.0)
            }
        }
    };
}
opaque_op!(Add, add, +);
opaque_op!(Sub, sub, -);
opaque_op!(Mul, mul, *);
opaque_op!(Div, div, /);
opaque_op!(Rem, rem, %);
opaque_op!(BitXor, bitxor, ^);

impl Idx for Opaque {
    type Bool = OpaqueBool;
    fn lit(v: i64) -> Self {
        Opaque(v)
    }
    fn to_const(&self) -> Option<i64> {
        None
    }
    fn lt(&self, o: &Self) -> OpaqueBool {
        OpaqueBool(self.0 < o.0)
    }
    fn eq_(&self, o: &Self) -> OpaqueBool {
        OpaqueBool(self.0 == o.0)
    }
    fn select(c: &OpaqueBool, t: Self, f: Self) -> Self {
        if c.0 {
            t
        } else {
            f
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Random curves: 1–4 dims, lengths 1..=7, scalars 1..=5 (often not dividing the length), any
// order, snake on or off.

#[derive(Debug, Clone)]
struct Params {
    lengths: Vec<i64>,
    order: Vec<usize>,
    scalars: Vec<i64>,
    snake: bool,
}

impl Params {
    fn build(&self) -> SpaceFillingCurve {
        SpaceFillingCurve::new(
            self.lengths.clone(),
            self.order.clone(),
            self.scalars.clone(),
            self.snake,
        )
        .expect("generated parameters are valid")
    }
}

fn params() -> impl Strategy<Value = Params> {
    (1usize..=4)
        .prop_flat_map(|n| {
            (
                prop::collection::vec(1i64..=7, n),
                Just((0..n).collect::<Vec<usize>>()).prop_shuffle(),
                prop::collection::vec(1i64..=5, n),
                any::<bool>(),
            )
        })
        .prop_map(|(lengths, order, scalars, snake)| Params { lengths, order, scalars, snake })
}

/// Row-major linear index of an element.
fn linear(lengths: &[i64], e: &[i64]) -> usize {
    e.iter().zip(lengths).fold(0i64, |acc, (x, l)| acc * l + x) as usize
}

/// Every element of the box `start .. start + extent`.
fn box_elements(start: &[i64], extent: &[i64]) -> Vec<Vec<i64>> {
    let mut out = vec![vec![]];
    for (s, e) in start.iter().zip(extent) {
        out = out
            .into_iter()
            .flat_map(|p| {
                (*s..s + e).map(move |x| {
                    let mut q = p.clone();
                    q.push(x);
                    q
                })
            })
            .collect();
    }
    out
}

proptest! {
    #[test]
    fn visits_every_element_exactly_once(p in params()) {
        let sfc = p.build();
        let total: i64 = p.lengths.iter().product();
        let mut count = vec![0u32; total as usize];
        let mut seen = 0i64;
        for a in sfc.accesses() {
            prop_assert_eq!(a.i, seen);
            seen += 1;
            for d in 0..p.lengths.len() {
                prop_assert_eq!(a.index[d] % p.scalars[d], 0, "start is a multiple of scalars");
                prop_assert!(a.extent[d] >= 1 && a.extent[d] <= p.scalars[d]);
                prop_assert!(a.index[d] + a.extent[d] <= p.lengths[d]);
                prop_assert_eq!(a.extent[d], p.scalars[d].min(p.lengths[d] - a.index[d]));
            }
            for e in box_elements(&a.index, &a.extent) {
                count[linear(&p.lengths, &e)] += 1;
                // the inverse map sends every element of the box back to this access
                prop_assert_eq!(sfc.access_at(&e), Some(a.i));
            }
        }
        prop_assert_eq!(seen, sfc.num_access());
        prop_assert!(count.iter().all(|&c| c == 1), "coverage counts {:?}", count);
    }

    #[test]
    fn index_matches_the_rule_and_every_domain(p in params()) {
        let sfc = p.build();
        for i in 0..sfc.num_access() {
            let idx = sfc.index(i).unwrap();
            prop_assert_eq!(&idx, &reference_index(&p.lengths, &p.order, &p.scalars, p.snake, i));
            prop_assert_eq!(&sfc.index_of::<i64>(&i), &idx);
            let opaque: Vec<i64> = sfc.index_of(&Opaque(i)).into_iter().map(|x| x.0).collect();
            prop_assert_eq!(&opaque, &idx);
            let ext: Vec<i64> = sfc.valid_extent_of(&Opaque(i)).into_iter().map(|x| x.0).collect();
            prop_assert_eq!(&ext, &sfc.valid_extent(i).unwrap());
        }
    }

    #[test]
    fn derived_lengths(p in params()) {
        let sfc = p.build();
        let ceil: Vec<i64> = p.lengths.iter().zip(&p.scalars).map(|(l, s)| (l + s - 1) / s).collect();
        prop_assert_eq!(sfc.access_lengths(), &ceil[..]);
        let ordered: Vec<i64> = p.order.iter().map(|&d| ceil[d]).collect();
        prop_assert_eq!(sfc.ordered_access_lengths(), &ordered[..]);
        prop_assert_eq!(sfc.num_access(), ceil.iter().product::<i64>());
        prop_assert_eq!(sfc.scalar_per_vector(), p.scalars.iter().product::<i64>());
        if p.lengths.iter().zip(&p.scalars).all(|(l, s)| l % s == 0) {
            prop_assert_eq!(
                sfc.num_access() * sfc.scalar_per_vector(),
                p.lengths.iter().product::<i64>()
            );
        }
    }

    #[test]
    fn step_between_is_a_difference(p in params(), a in 0i64..10_000, b in 0i64..10_000) {
        let sfc = p.build();
        let n = sfc.num_access();
        let (a, b) = (a % n, b % n);
        let (ia, ib) = (sfc.index(a).unwrap(), sfc.index(b).unwrap());
        let diff: Vec<i64> = ib.iter().zip(&ia).map(|(y, x)| y - x).collect();
        prop_assert_eq!(sfc.step_between(a, b).unwrap(), diff);
        prop_assert!(sfc.step_between(a, n).is_err());
        prop_assert!(sfc.step_between(-1, b).is_err());
    }

    #[test]
    fn forward_and_backward_steps_agree(p in params()) {
        let sfc = p.build();
        let n = sfc.num_access();
        for i in 0..n {
            let fwd = sfc.forward_step(i);
            let bwd = sfc.backward_step(i);
            if i + 1 < n {
                prop_assert_eq!(fwd.clone(), Some(sfc.step_between(i, i + 1).unwrap()));
                let back_next = sfc.backward_step(i + 1).unwrap();
                let neg: Vec<i64> = back_next.iter().map(|x| -x).collect();
                prop_assert_eq!(fwd.clone(), Some(neg));
            } else {
                prop_assert_eq!(fwd.clone(), None);
            }
            if i > 0 {
                prop_assert_eq!(bwd, Some(sfc.step_between(i, i - 1).unwrap()));
            } else {
                prop_assert_eq!(bwd, None);
            }
            // walking the forward steps from access 0 reaches every start
            if let Some(f) = fwd {
                let here = sfc.index(i).unwrap();
                let there: Vec<i64> = here.iter().zip(&f).map(|(x, s)| x + s).collect();
                prop_assert_eq!(there, sfc.index(i + 1).unwrap());
            }
        }
        prop_assert_eq!(sfc.forward_step(-1), None);
        prop_assert_eq!(sfc.forward_step(n), None);
        prop_assert_eq!(sfc.backward_step(n), None);
        prop_assert_eq!(sfc.backward_step(i64::MIN), None);
        prop_assert_eq!(sfc.forward_step(i64::MAX), None);
        prop_assert!(sfc.index(n).is_err() && sfc.index(-1).is_err());
        prop_assert!(sfc.valid_extent(n).is_err());
    }

    /// With snake, consecutive accesses are always neighbours: one dim moves by one vector.
    #[test]
    fn snake_steps_are_single_moves(p in params()) {
        let p = Params { snake: true, ..p };
        let sfc = p.build();
        for i in 0..sfc.num_access() - 1 {
            let f = sfc.forward_step(i).unwrap();
            let moved: Vec<usize> = (0..f.len()).filter(|&d| f[d] != 0).collect();
            prop_assert_eq!(moved.len(), 1, "step {:?} at {}", f, i);
            prop_assert_eq!(f[moved[0]].abs(), p.scalars[moved[0]]);
        }
    }

    #[test]
    fn access_at_rejects_outside(p in params()) {
        let sfc = p.build();
        let mut e: Vec<i64> = vec![0; p.lengths.len()];
        prop_assert!(sfc.access_at(&e).is_some());
        e[0] = p.lengths[0];
        prop_assert_eq!(sfc.access_at(&e), None);
        e[0] = -1;
        prop_assert_eq!(sfc.access_at(&e), None);
        prop_assert_eq!(sfc.access_at(&e[1..]), None);
    }
}

// ---------------------------------------------------------------------------------------------
// Literal tables from the reference.

fn curve(lengths: &[i64], order: &[usize], scalars: &[i64], snake: bool) -> SpaceFillingCurve {
    SpaceFillingCurve::new(lengths.to_vec(), order.to_vec(), scalars.to_vec(), snake).unwrap()
}

fn all_indices(sfc: &SpaceFillingCurve) -> Vec<[i64; 3]> {
    sfc.accesses().map(|a| [a.index[0], a.index[1], a.index[2]]).collect()
}

/// CK's own test table (legacy `test/space_filling_curve/space_filling_curve.cpp`, and
/// `sfc.json` `ck_test_linear_3x2x2_order201`): lengths (3,2,2), order (2,0,1), no snake.
#[test]
fn ck_test_linear_3x2x2_order201() {
    let sfc = curve(&[3, 2, 2], &[2, 0, 1], &[1, 1, 1], false);
    assert_eq!(sfc.access_lengths(), [3, 2, 2]);
    assert_eq!(sfc.ordered_access_lengths(), [2, 3, 2]);
    assert_eq!(sfc.num_access(), 12);
    assert_eq!(
        all_indices(&sfc),
        [
            [0, 0, 0],
            [0, 1, 0],
            [1, 0, 0],
            [1, 1, 0],
            [2, 0, 0],
            [2, 1, 0],
            [0, 0, 1],
            [0, 1, 1],
            [1, 0, 1],
            [1, 1, 1],
            [2, 0, 1],
            [2, 1, 1],
        ]
    );
    let fwd: Vec<Option<Vec<i64>>> = (0..12).map(|i| sfc.forward_step(i)).collect();
    assert_eq!(fwd[0], Some(vec![0, 1, 0]));
    assert_eq!(fwd[1], Some(vec![1, -1, 0]));
    assert_eq!(fwd[5], Some(vec![-2, -1, 1]));
    assert_eq!(fwd[11], None);
    assert_eq!(sfc.step_between(0, 11).unwrap(), vec![2, 1, 1]);
}

/// The snake parity rule (`sfc.json` `3d_3x2x2_snake_parity`): the innermost dim reverses for
/// outer linear indices 1, 3, 5 — not by the parity of its parent digit.
#[test]
fn snake_parity_3x2x2() {
    let sfc = curve(&[3, 2, 2], &[0, 1, 2], &[1, 1, 1], true);
    assert_eq!(
        all_indices(&sfc),
        [
            [0, 0, 0],
            [0, 0, 1],
            [0, 1, 1],
            [0, 1, 0],
            [1, 1, 0],
            [1, 1, 1],
            [1, 0, 1],
            [1, 0, 0],
            [2, 0, 0],
            [2, 0, 1],
            [2, 1, 1],
            [2, 1, 0],
        ]
    );
    assert_eq!(sfc.forward_step(3), Some(vec![1, 0, 0]));
    assert_eq!(sfc.forward_step(5), Some(vec![0, -1, 0]));
    assert_eq!(sfc.step_between(0, 11).unwrap(), vec![2, 1, 0]);
}

/// CK's legacy test table: lengths (16,10,9), order (2,0,1), scalars (4,2,3), snake (the
/// legacy default). All 60 starts, as listed in the test.
#[test]
fn ck_test_snake_16x10x9_order201_vec423() {
    let sfc = curve(&[16, 10, 9], &[2, 0, 1], &[4, 2, 3], true);
    assert_eq!(sfc.access_lengths(), [4, 5, 3]);
    assert_eq!(sfc.ordered_access_lengths(), [3, 4, 5]);
    assert_eq!(sfc.scalar_per_vector(), 24);
    #[rustfmt::skip]
    let expected: [[i64; 3]; 60] = [
        [0, 0, 0], [0, 2, 0], [0, 4, 0], [0, 6, 0], [0, 8, 0],
        [4, 8, 0], [4, 6, 0], [4, 4, 0], [4, 2, 0], [4, 0, 0],
        [8, 0, 0], [8, 2, 0], [8, 4, 0], [8, 6, 0], [8, 8, 0],
        [12, 8, 0], [12, 6, 0], [12, 4, 0], [12, 2, 0], [12, 0, 0],
        [12, 0, 3], [12, 2, 3], [12, 4, 3], [12, 6, 3], [12, 8, 3],
        [8, 8, 3], [8, 6, 3], [8, 4, 3], [8, 2, 3], [8, 0, 3],
        [4, 0, 3], [4, 2, 3], [4, 4, 3], [4, 6, 3], [4, 8, 3],
        [0, 8, 3], [0, 6, 3], [0, 4, 3], [0, 2, 3], [0, 0, 3],
        [0, 0, 6], [0, 2, 6], [0, 4, 6], [0, 6, 6], [0, 8, 6],
        [4, 8, 6], [4, 6, 6], [4, 4, 6], [4, 2, 6], [4, 0, 6],
        [8, 0, 6], [8, 2, 6], [8, 4, 6], [8, 6, 6], [8, 8, 6],
        [12, 8, 6], [12, 6, 6], [12, 4, 6], [12, 2, 6], [12, 0, 6],
    ];
    assert_eq!(all_indices(&sfc), expected);
    assert_eq!(sfc.forward_step(4), Some(vec![4, 0, 0]));
    assert_eq!(sfc.forward_step(19), Some(vec![0, 0, 3]));
    assert_eq!(sfc.backward_step(40), Some(vec![0, 0, -3]));
}

/// `sfc.json` `2d_4x6_rowmajor_snake` and `2d_4x8_vec4_snake`.
#[test]
fn doc_examples_2d_snake() {
    let sfc = curve(&[4, 6], &[0, 1], &[1, 1], true);
    let rows: Vec<Vec<i64>> = sfc.accesses().map(|a| a.index).collect();
    assert_eq!(rows[5..8], [vec![0, 5], vec![1, 5], vec![1, 4]]);
    assert_eq!(rows[23], vec![3, 0]);
    assert_eq!(sfc.step_between(0, 23).unwrap(), vec![3, 0]);

    let sfc = curve(&[4, 8], &[0, 1], &[1, 4], true);
    let starts: Vec<Vec<i64>> = sfc.accesses().map(|a| a.index).collect();
    assert_eq!(
        starts,
        [[0, 0], [0, 4], [1, 4], [1, 0], [2, 0], [2, 4], [3, 4], [3, 0]].map(|x| x.to_vec())
    );
    let fwd: Vec<Option<Vec<i64>>> = (0..8).map(|i| sfc.forward_step(i)).collect();
    assert_eq!(fwd[2], Some(vec![0, -4]));
    assert_eq!(fwd[7], None);
}

/// `sfc.json` `4d_2x3x2x4_mixed_nosnake`: order (0,2,1,3), scalars (2,1,1,2).
#[test]
fn mixed_4d_nosnake() {
    let sfc = curve(&[2, 3, 2, 4], &[0, 2, 1, 3], &[2, 1, 1, 2], false);
    assert_eq!(sfc.access_lengths(), [1, 3, 2, 2]);
    assert_eq!(sfc.ordered_access_lengths(), [1, 2, 3, 2]);
    assert_eq!(sfc.index(6).unwrap(), vec![0, 0, 1, 0]);
    assert_eq!(sfc.forward_step(5), Some(vec![0, -2, 1, -2]));
    assert_eq!(sfc.step_between(0, 11).unwrap(), vec![0, 2, 1, 2]);
}

/// The design documents' non-divisible example: 5×7 with 2×3 accesses has 3×3 accesses (the
/// reference floors to 2×2 and refuses to count them); the last row and column are partial.
#[test]
fn non_divisible_5x7_vec2x3() {
    let sfc = curve(&[5, 7], &[0, 1], &[2, 3], false);
    assert_eq!(sfc.access_lengths(), [3, 3]);
    assert_eq!(sfc.num_access(), 9);
    assert_eq!(sfc.scalar_per_vector(), 6);
    let got: Vec<(Vec<i64>, Vec<i64>)> = sfc.accesses().map(|a| (a.index, a.extent)).collect();
    let expected: [([i64; 2], [i64; 2]); 9] = [
        ([0, 0], [2, 3]),
        ([0, 3], [2, 3]),
        ([0, 6], [2, 1]),
        ([2, 0], [2, 3]),
        ([2, 3], [2, 3]),
        ([2, 6], [2, 1]),
        ([4, 0], [1, 3]),
        ([4, 3], [1, 3]),
        ([4, 6], [1, 1]),
    ];
    assert_eq!(got, expected.map(|(a, b)| (a.to_vec(), b.to_vec())));

    // with snake, the reversed row starts at the partial access
    let sfc = curve(&[5, 7], &[0, 1], &[2, 3], true);
    assert_eq!(sfc.index(3).unwrap(), vec![2, 6]);
    assert_eq!(sfc.valid_extent(3).unwrap(), vec![2, 1]);
    assert_eq!(sfc.forward_step(2), Some(vec![2, 0]));
}

#[test]
fn scalars_larger_than_the_length() {
    let sfc = curve(&[3], &[0], &[8], true);
    assert_eq!(sfc.num_access(), 1);
    assert_eq!(sfc.valid_extent(0).unwrap(), vec![3]);
    assert_eq!(sfc.forward_step(0), None);
}

#[test]
fn constructor_errors_name_field_value_and_rule() {
    let err = |l: &[i64], o: &[usize], s: &[i64]| {
        SpaceFillingCurve::new(l.to_vec(), o.to_vec(), s.to_vec(), true).unwrap_err()
    };
    assert_eq!(
        err(&[], &[], &[]).to_string(),
        "space_filling_curve: tensor_lengths has 0 entries, expected at least 1 (ndim >= 1)"
    );
    assert_eq!(
        err(&[4, 0], &[0, 1], &[1, 1]).to_string(),
        "space_filling_curve: tensor_lengths[1] = 0 is invalid: lengths must be >= 1"
    );
    assert_eq!(
        err(&[4, 8], &[0], &[1, 1]).to_string(),
        "space_filling_curve: dim_access_order has 1 entries, expected 2 \
         (a permutation of 0..2, one entry per dim of tensor_lengths)"
    );
    assert_eq!(
        err(&[4, 8], &[0, 2], &[1, 1]).to_string(),
        "space_filling_curve: dim_access_order[1] = 2 is invalid: \
         the curve has 2 dims, so the order must be a permutation of 0..2"
    );
    assert_eq!(
        err(&[4, 8], &[0, 0], &[1, 1]),
        LayoutError::invalid(
            "space_filling_curve",
            "dim_access_order[1]",
            0usize,
            "dim 0 already appears at dim_access_order[0]; the order must be a permutation of 0..2"
        )
    );
    assert_eq!(
        err(&[4, 8], &[0, 1], &[1]).to_string(),
        "space_filling_curve: scalars_per_access has 1 entries, expected 2 (one per dim of tensor_lengths)"
    );
    assert_eq!(
        err(&[4, 8], &[0, 1], &[-2, 1]).to_string(),
        "space_filling_curve: scalars_per_access[0] = -2 is invalid: scalars per access must be >= 1"
    );
    let big = 1i64 << 40;
    assert_eq!(
        err(&[big, big], &[0, 1], &[1, 1]).to_string(),
        format!(
            "space_filling_curve: tensor_lengths = [{big}, {big}] is invalid: \
             the element count overflows i64 (or usize)"
        )
    );
    assert!(matches!(err(&[4, 8], &[0, 1], &[big, big]), LayoutError::InvalidParameter { .. }));
}
