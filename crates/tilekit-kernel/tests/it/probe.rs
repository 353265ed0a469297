//! The timeline probe ([`tilekit_kernel::probe`]) on the interpreter: each warpgroup's leader
//! appends to its own slice of its own block (linear block id over a 2-D grid), in program
//! order; a slice stops at `probe_cap` events and nothing is written past it; the host side
//! decodes, pairs and sums.

use tilekit_ir::interp::{run, Args, HostBuffer};
use tilekit_ir::{Clock, KernelBuilder};
use tilekit_kernel::lit;
use tilekit_kernel::probe::{spans, Probe, ProbeLayout, Timeline, EMPTY};

#[test]
fn each_warpgroup_fills_its_own_slice_in_order_and_stops_at_the_cap() {
    // 384 threads (3 warpgroups), grid 3 × 2: warpgroup w runs 1 + w iterations of a loop
    // marking begin and end of kind 7 + w (2 + 2w events), then one event 100 + w; cap 4
    let b = KernelBuilder::new("probed", [384, 1, 1]).unwrap();
    let p = Probe::new(&b, Clock::Sm).unwrap();
    let wg = b.warpgroup_id();
    b.for_range(&lit(0), &(wg.clone() + lit(1)), &lit(1), &[], |b, _, _| {
        for w in 0..3u32 {
            let mine = b.cmp(tilekit_ir::CmpOp::Eq, &wg, &lit(w as i64))?;
            b.if_then(&mine, |b| {
                p.begin(b, 7 + w)?;
                p.end(b, 7 + w)
            })?;
        }
        Ok(vec![])
    })
    .unwrap();
    for w in 0..3u64 {
        let mine = b.cmp(tilekit_ir::CmpOp::Eq, &wg, &lit(w as i64)).unwrap();
        b.if_then(&mine, |b| p.mark(b, 100 + w)).unwrap();
    }
    let k = b.finish().unwrap();
    let layout = ProbeLayout { blocks: 6, warpgroups: 3, cap: 4 };
    // 6 spare words past the layout stay untouched
    let mut a = Args::new();
    a.buffer(HostBuffer::from_i64(&vec![EMPTY; layout.len() + 6])).int(4);
    run(&k, [3, 2, 1], &mut a).unwrap();
    let words = a.take_buffer(0).unwrap().to_i64().unwrap();
    assert!(words[layout.len()..].iter().all(|&w| w == EMPTY));
    let recs = layout.decode(&words[..layout.len()]).unwrap();
    for block in 0..6 {
        for w in 0..3usize {
            let mine: Vec<_> =
                recs.iter().filter(|r| r.block == block && r.warpgroup == w).collect();
            let mut want: Vec<u64> = vec![];
            for _ in 0..=w {
                want.extend([2 * (7 + w as u64), 2 * (7 + w as u64) + 1]);
            }
            want.push(100 + w as u64);
            want.truncate(4);
            let got: Vec<u64> = mine.iter().map(|r| r.event).collect();
            assert_eq!(got, want, "block {block}, warpgroup {w}");
            assert!(mine.windows(2).all(|x| x[0].time < x[1].time), "{mine:?}");
            assert_eq!(layout.full(&recs, block, w), w > 0, "block {block}, warpgroup {w}");
        }
    }
    // the pairs: warpgroup 0 one span of kind 7, 1 two of kind 8, 2 two of kind 9 (its second
    // pair was cut by the cap: 9 begin, 9 end, 9 begin, 9 end, [9 begin …] dropped)
    let s = spans(&recs);
    let t = Timeline::new(&s);
    for block in 0..6 {
        assert_eq!(t.sum(block, 0, 7).0, 1);
        assert_eq!(t.sum(block, 1, 8).0, 2);
        assert_eq!(t.sum(block, 2, 9).0, 2);
        // on the interpreter a span's length is the clock reads executed between its marks
        assert!(t.sum(block, 0, 7).1 > 0);
    }
}
