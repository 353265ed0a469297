//! What `tilekit tune --save` keeps of a sweep (the selection, without a GPU), and what it offers.

use tilekit_cli::tune::{winners, Candidate, Knob};
use tilekit_ops::reduce::OnlineTuning;
use tilekit_ops::tuning::Tuning;

fn cand(case: &str, knob: Knob, ratio: f64) -> Candidate {
    Candidate {
        case: case.into(),
        config: format!("{knob:?}"),
        median_ms: 1.0,
        gb_per_s: ratio * 3000.0,
        ratio_to_copy: ratio,
        device: "G".into(),
        knob,
    }
}

const O512: OnlineTuning =
    OnlineTuning { threads: 512, unroll: 4, reverse: true, blocks_per_sm: 0 };
const O256: OnlineTuning =
    OnlineTuning { threads: 256, unroll: 4, reverse: true, blocks_per_sm: 0 };

#[test]
fn the_online_shape_is_the_best_on_average_over_the_long_rows() {
    let c = [
        cand("softmax 65536 bf16", Knob::Online(O256), 0.70),
        cand("softmax 65536 bf16", Knob::Online(O512), 0.76),
        cand("softmax 262144 bf16", Knob::Online(O256), 0.66),
        cand("softmax 262144 bf16", Knob::Online(O512), 0.65),
    ];
    let t = winners(Tuning::default(), &c);
    assert_eq!(t.online, O512); // mean 0.705 against 0.68
    assert_eq!(t.softmax_staged, None);
}

#[test]
fn the_staged_kernel_is_kept_only_where_it_beats_the_online_one() {
    let mut c = vec![
        cand("softmax 65536 bf16", Knob::Online(O512), 0.76),
        cand("softmax 65536 bf16", Knob::Staged(512, 4), 0.93),
        cand("softmax 65536 bf16", Knob::Staged(1024, 2), 0.90),
        cand("softmax 262144 bf16", Knob::Online(O512), 0.65),
    ];
    assert_eq!(winners(Tuning::default(), &c).softmax_staged, Some((512, 4)));
    c[1].ratio_to_copy = 0.70;
    c[2].ratio_to_copy = 0.71;
    assert_eq!(winners(Tuning::default(), &c).softmax_staged, None);
}

#[test]
fn register_threads_only_come_from_register_candidates() {
    use tilekit_ir::ScalarType::{BF16, F32};
    let c = [
        cand("softmax 16384 bf16", Knob::SoftmaxThreads(BF16, 256), 0.82),
        cand("softmax 16384 bf16", Knob::SoftmaxThreads(BF16, 512), 0.94),
        cand("softmax 16384 bf16", Knob::Online(O256), 0.97),
        cand("softmax 16384 f32", Knob::SoftmaxThreads(F32, 256), 0.91),
        cand("softmax 16384 f32", Knob::SoftmaxThreads(F32, 1024), 0.78),
    ];
    let t = winners(Tuning { softmax_threads_bf16: 256, ..Tuning::default() }, &c);
    assert_eq!((t.softmax_threads_bf16, t.softmax_threads_f32), (512, 256));
    // an online candidate in a register-sized case does not move the long-row shape
    assert_eq!(t.online, Tuning::default().online);
}

#[test]
fn transpose_loops_are_chosen_by_their_mean_over_the_permute_and_transpose_cases() {
    use tilekit_ops::transpose::TransposeLoop;
    let one = TransposeLoop::default();
    let four = TransposeLoop {
        tiles_per_block: 4,
        buffers: 1,
        prefetch: true,
        min_blocks: 0,
        cache: tilekit_ir::GlobalCache::Default,
    };
    let eight = TransposeLoop {
        tiles_per_block: 8,
        buffers: 2,
        prefetch: false,
        min_blocks: 0,
        cache: tilekit_ir::GlobalCache::Default,
    };
    let c = [
        cand("permute 512x512x256 bf16", Knob::Transpose16(8, one), 0.89),
        cand("permute 512x512x256 bf16", Knob::Transpose16(8, four), 0.95),
        cand("permute 512x512x256 bf16", Knob::Transpose16(4, four), 0.96),
        cand("transpose 16384x16384 bf16", Knob::Transpose16(8, one), 0.94),
        cand("transpose 16384x16384 bf16", Knob::Transpose16(8, four), 0.95),
        cand("transpose 16384x16384 bf16", Knob::Transpose16(4, four), 0.90),
        cand("permute 512x512x256 f32", Knob::TransposeF32(one), 0.92),
        cand("permute 512x512x256 f32", Knob::TransposeF32(eight), 0.96),
        cand("transpose 16384x16384 f32", Knob::TransposeF32(one), 0.95),
        cand("transpose 16384x16384 f32", Knob::TransposeF32(eight), 0.94),
    ];
    let t = winners(Tuning::default(), &c);
    // bf16: (8, four) means 0.95, (4, four) 0.93, (8, one) 0.915; f32: eight 0.95, one 0.935
    assert_eq!((t.transpose_micro_16bit, t.transpose_loop_16bit), (8, four));
    assert_eq!(t.transpose_loop_f32, eight);
    // without transpose candidates the defaults stay
    let t = winners(Tuning::default(), &c[..0]);
    assert_eq!((t.transpose_loop_f32, t.transpose_loop_16bit), (one, one));
}

#[test]
fn the_coop_shape_is_kept_only_where_it_beats_what_the_api_would_launch() {
    use tilekit_ops::reduce::CoopTuning;
    let a = CoopTuning::in_registers(256, 32);
    let b = CoopTuning::in_registers(512, 64);
    // `small` ran only on the shorter rows (too many blocks for the longer): it does not compete
    let small = CoopTuning::in_registers(128, 16);
    let mut c = vec![
        cand("softmax 65536 f32", Knob::Online(O512), 0.70),
        cand("softmax 65536 f32", Knob::Coop(a), 0.93),
        cand("softmax 65536 f32", Knob::Coop(b), 0.95),
        cand("softmax 65536 f32", Knob::Coop(small), 0.99),
        cand("softmax 262144 f32", Knob::Online(O512), 0.66),
        cand("softmax 262144 f32", Knob::Coop(a), 0.92),
        cand("softmax 262144 f32", Knob::Coop(b), 0.86),
    ];
    let base = Tuning { online: O512, softmax_cluster: None, ..Tuning::default() };
    // a: mean 0.925, b: 0.905; the online kernel: 0.68
    assert_eq!(winners(base, &c).softmax_coop, Some(a));
    // a cluster shape chosen for these rows that beats every coop shape keeps the coop off
    let cl = tilekit_ops::reduce::ClusterTuning::default();
    c.push(cand("softmax 65536 f32", Knob::Cluster(cl), 0.97));
    c.push(cand("softmax 262144 f32", Knob::Cluster(cl), 0.95));
    assert_eq!(winners(base, &c).softmax_cluster, Some(cl));
    assert_eq!(winners(base, &c).softmax_coop, None);
    // without coop candidates the tuning's own choice stays
    let kept = Tuning { softmax_coop: Some(b), ..base };
    assert_eq!(winners(kept, &c[..1]).softmax_coop, Some(b));
}

#[test]
fn long_rows_offer_every_shared_memory_coop_shape_to_the_coop_filter() {
    use tilekit_cli::tune::softmax_configs;
    use tilekit_ir::ScalarType;
    use tilekit_ops::reduce::CoopTuning;
    for ty in [ScalarType::F32, ScalarType::BF16] {
        // every shared-memory shape whose one step fits the slice it asks for (a larger step
        // gives the kernel of a larger slice, timed once under that name), with two
        // exponentials per element and with one, two of 96 KiB, the 6 cluster, 4 early and 3
        // speculated-ticket shapes, the 6 holding part of the slice in registers (4 of them
        // clusters), and the 3 ring shapes
        let want: Vec<CoopTuning> = CoopTuning::candidates()
            .into_iter()
            .filter(|c| c.smem() && c.threads * 16 * c.unroll(ty) as u32 <= c.smem_kib * 1024)
            .collect();
        let f32 = ty == ScalarType::F32;
        assert_eq!(want.len(), if f32 { 22 + 12 + 3 + 3 } else { 32 + 12 + 3 + 3 } + 6, "{ty}");
        assert_eq!(want.iter().filter(|c| c.held > 0).count(), 6, "{ty}");
        assert_eq!(want.iter().filter(|c| c.spec).count(), 3, "{ty}");
        assert_eq!(want.iter().filter(|c| c.ring > 0).count(), 3, "{ty}");
        assert_eq!(want.iter().filter(|c| c.cluster && c.held == 0).count(), 6, "{ty}");
        assert_eq!(want.iter().filter(|c| c.early).count(), 4, "{ty}");
        // half the 22 (32) swept shapes, the 96 KiB ones, 4 of the cluster ones, every early
        // one, 2 of the speculated ones, every held one
        let one_exp = if f32 { 11 } else { 16 } + 2 + 4 + 4 + 2 + 6;
        assert_eq!(want.iter().filter(|c| c.one_exp).count(), one_exp, "{ty}");
        for n in [65536i64, 262144] {
            let configs = softmax_configs(ty, n);
            // what `--config coop` keeps: the register and the shared-memory shapes
            let coop: Vec<&(String, Knob)> =
                configs.iter().filter(|(l, _)| l.contains("coop")).collect();
            let smem: Vec<CoopTuning> = coop
                .iter()
                .filter_map(|(_, k)| match k {
                    Knob::Coop(c) if c.smem() => Some(*c),
                    _ => None,
                })
                .collect();
            // (a row of more than 16 blocks has no cluster shape)
            let planned: Vec<CoopTuning> =
                want.iter().filter(|c| c.plan(ty, n).is_some()).copied().collect();
            // (f32 rows of 262144 over 32 KiB slices: 32 blocks)
            assert_eq!(planned.len() < want.len(), f32 && n == 262144, "{ty} {n}");
            assert_eq!(smem, planned, "{ty} {n}");
            for (label, k) in &coop {
                let Knob::Coop(c) = k else { panic!("{label}: {k:?}") };
                let smem_label = label.starts_with("coop smem") || label.starts_with("coop ring");
                assert_eq!(smem_label, c.smem(), "{label}");
                assert_eq!(label.starts_with("coop ring"), c.ring > 0, "{label}");
                assert_eq!(label.contains(" 1exp"), c.one_exp, "{label}");
                assert_eq!(label.contains(" cluster"), c.cluster, "{label}");
            }
        }
    }
}

#[test]
fn a_cluster_shape_is_saved_with_the_counter_shape_for_rows_beyond_eight_blocks() {
    use tilekit_ops::reduce::CoopTuning;
    // H200-like ratios (bench/RESULTS.md session 15): the cluster shape wins the rows it splits
    // into at most 8 blocks (f32 65536: 4 blocks of 64 KiB), loses those of 16 (f32 262144)
    let cl = CoopTuning::in_shared(256, 32, 64).with_one_exp().with_cluster();
    let n = CoopTuning::in_shared(256, 32, 64);
    let worse = CoopTuning::in_shared(256, 16, 32);
    let c = vec![
        cand("softmax 2048x65536 f32", Knob::Coop(cl), 0.916),
        cand("softmax 2048x65536 f32", Knob::Coop(n), 0.900),
        cand("softmax 2048x65536 f32", Knob::Coop(worse), 0.850),
        cand("softmax 512x262144 f32", Knob::Coop(cl), 0.837),
        cand("softmax 512x262144 f32", Knob::Coop(n), 0.879),
        cand("softmax 512x262144 f32", Knob::Coop(worse), 0.851),
        cand("softmax 2048x65536 f32", Knob::Online(O512), 0.70),
        cand("softmax 512x262144 f32", Knob::Online(O512), 0.66),
    ];
    let base = Tuning { online: O512, softmax_cluster: None, ..Tuning::default() };
    // the pair: 0.916 and 0.879, mean 0.8975, above the counter shape alone (0.8895)
    let t = winners(base, &c);
    assert_eq!((t.softmax_coop, t.softmax_coop_long), (Some(cl), Some(n)));
    // where the cluster shape loses its own rows too, the counter shape alone, no pair
    let mut c2 = c.clone();
    c2[0].ratio_to_copy = 0.880;
    let t = winners(base, &c2);
    assert_eq!((t.softmax_coop, t.softmax_coop_long), (Some(n), None));
    // the 16-bit fields stay as they were
    assert_eq!((t.softmax_coop_16bit, t.softmax_coop_long_16bit), (None, None));
}

#[test]
fn rows_all_within_the_cluster_save_the_best_counter_shape_for_longer_rows() {
    use tilekit_ops::reduce::CoopTuning;
    // bf16 on the H200 (session 16, call 8): both long rows fit a cluster of at most 8 blocks
    // of 64 KiB (65536: 2, 262144: 8), so the counter shape is never used by the pair; the
    // saved long shape must be the counter shape with the best mean, not the first listed
    // (call 8 saved a 128-thread register shape that way)
    let cl = CoopTuning::in_shared(256, 32, 64).with_one_exp().with_cluster();
    let first = CoopTuning::in_registers(128, 32);
    let good = CoopTuning::in_shared(256, 16, 64).with_one_exp().with_spec();
    let c = vec![
        cand("softmax 4096x65536 bf16", Knob::Coop(cl), 0.926),
        cand("softmax 4096x65536 bf16", Knob::Coop(first), 0.60),
        cand("softmax 4096x65536 bf16", Knob::Coop(good), 0.89),
        cand("softmax 1024x262144 bf16", Knob::Coop(cl), 0.890),
        cand("softmax 1024x262144 bf16", Knob::Coop(first), 0.55),
        cand("softmax 1024x262144 bf16", Knob::Coop(good), 0.887),
    ];
    let base = Tuning { softmax_cluster: None, ..Tuning::default() };
    let t = winners(base, &c);
    assert_eq!((t.softmax_coop_16bit, t.softmax_coop_long_16bit), (Some(cl), Some(good)));
}
