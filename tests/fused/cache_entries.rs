//! Cache entries at the edges: positions and slots past the cache (skipped and flagged), an
//! empty cache, and two tokens of one call written to the same entry.

use super::common::{self, Elements, Rng, ctx, u32_buffer};
use super::{Case, GUARD, Index, has_f16, run};
use wgpu_posenc::reference::{self, HostCacheIndex};
use wgpu_posenc::{
    ArrayView, CacheIndex, Dims, Dtype, Error, HostPositions, KvCache, Layout, Positions, QkvCall,
    TensorView,
};

#[test]
fn positions_or_slots_past_the_cache_are_skipped_and_flagged() {
    let slots = Case {
        index: Index::Slots(vec![0, 31, 2, -1]),
        cache_len: 8,
        ..Case::new(
            "a slot past the cache",
            [1, 4, 2, 1, 16],
            Positions::Start(0),
        )
    };
    assert_eq!(run(&slots, 7).expect("run"), 1, "slot 31 of 8");
    let ids = Case {
        cache_len: 8,
        ..Case::new(
            "an id past the cache",
            [2, 2, 2, 2, 16],
            Positions::Ids(vec![0, 3, 8, 1]),
        )
    };
    assert_eq!(run(&ids, 8).expect("run"), 1, "position 8 of 8");
}

#[test]
fn an_empty_cache_skips_and_flags_every_token() {
    // [batch 1, seq 5, 4 Q heads, 2 KV heads, head_dim 16] at offset 3, caches of no entries
    // at offsets (2, 1) and (0, 0): Q is still rotated, nothing is cached, every token is
    // flagged (positions and slots on the GPU are all past an empty cache).
    for offsets in [[2, 1], [0, 0]] {
        for (index, positions) in [
            (
                Index::Position { bshd: false },
                Positions::Ids((0..5).collect()),
            ),
            (Index::Slots((0..5).collect()), Positions::Start(1)),
            (Index::Slots(vec![-1, 0, 3, -1, 9]), Positions::Start(0)),
        ] {
            let case = Case {
                cache_len: 0,
                cache_offsets: offsets,
                offset: 3,
                index,
                ..Case::new("an empty cache", [1, 5, 4, 2, 16], positions)
            };
            let flag = run(&case, 11).unwrap_or_else(|e| panic!("{case:?}: {e}"));
            assert_eq!(flag, 1, "{case:?}");
        }
    }
    // Positions known on the host are checked there: the cache is too short.
    let start = Case {
        cache_len: 0,
        ..Case::new("an empty cache", [1, 5, 4, 2, 16], Positions::Start(0))
    };
    assert!(
        matches!(
            run(&start, 12),
            Err(Error::KvCacheTooShort {
                position: 4,
                len: 0
            })
        ),
        "{:?}",
        run(&start, 12)
    );
}

/// Two tokens of one call that go to the same cache entry (ids `[1, 1]`, or vLLM's
/// duplicate slot): every element of the entry holds one of the two tokens' values, never a
/// mix of their bits, in every cache dtype and width; nothing else in the caches changes.
#[test]
fn tokens_sharing_a_cache_entry_leave_one_of_their_values() {
    for (d, cache_dtype) in [
        (2, Dtype::BF16),
        (6, Dtype::BF16),
        (16, Dtype::BF16),
        (6, Dtype::F32),
        (6, Dtype::F16),
    ] {
        if cache_dtype == Dtype::F16 && !has_f16() {
            continue;
        }
        for slots in [false, true] {
            let index = if slots {
                Index::Slots(vec![1, 1])
            } else {
                Index::Position { bshd: false }
            };
            let positions = if slots {
                Positions::Start(3)
            } else {
                Positions::Ids(vec![1, 1])
            };
            let case = Case {
                cache_len: 4,
                cache_dtype,
                index,
                ..Case::new("duplicate entry", [1, 2, 1, 1, d], positions)
            };
            shared_entry_holds_one_token(&case);
        }
    }
}

fn shared_entry_holds_one_token(case: &Case) {
    let mut rng = Rng::new(40 + case.dims[4]);
    let [batch, seq, q_heads, kv_heads, d] = case.dims;
    let qkv_layout = Layout::bshd(Dims {
        batch,
        heads: q_heads + 2 * kv_heads,
        seq,
        head_dim: d,
    });
    let cache_layout = Layout::bhsd([1, kv_heads, case.cache_len, d]).with_offset(GUARD);
    let qkv = Elements::new(&mut rng, case.dtype, &[(qkv_layout, true)], GUARD).expect("layout");
    let k =
        Elements::new(&mut rng, case.cache_dtype, &[(cache_layout, false)], GUARD).expect("layout");
    let v =
        Elements::new(&mut rng, case.cache_dtype, &[(cache_layout, false)], GUARD).expect("layout");
    let pos = case.positions.as_ref().map(|p| u32_buffer(p));
    let slot_list: Vec<i32> = match &case.index {
        Index::Slots(s) => s.clone(),
        Index::Position { .. } => vec![],
    };
    let slot_words: Vec<u32> = slot_list.iter().map(|&s| s as u32).collect();
    let slot_buffer = u32_buffer(&slot_words);
    fn view(data: &Elements, layout: Layout) -> TensorView<'_> {
        TensorView::new(&data.buffer, layout).with_dtype(data.dtype)
    }
    let call = QkvCall::new(
        view(&qkv, qkv_layout),
        kv_heads,
        pos.as_ref().map(ArrayView::new),
        KvCache {
            k: view(&k, cache_layout),
            v: view(&v, cache_layout),
            index: match case.index {
                Index::Slots(_) => CacheIndex::Slots(ArrayView::new(&slot_buffer)),
                Index::Position { .. } => CacheIndex::Position,
            },
            overflow_flag: None,
        },
    );
    let mut encoder = ctx().device().create_command_encoder(&Default::default());
    ctx()
        .encode_qkv(&mut encoder, &case.spec, &call)
        .expect("encode");
    ctx().queue().submit([encoder.finish()]);
    // What each token alone leaves in the caches: the other's slot set to -1.
    let host: HostPositions<'_> = case.positions.as_ref().map(|p| &p[..]);
    let alone = |token: usize| {
        let (mut x, mut kr, mut vr) = (qkv.values(), k.values(), v.values());
        let mut only: Vec<i32> = match &case.index {
            Index::Slots(s) => s.clone(),
            Index::Position { .. } => vec![1; seq as usize],
        };
        for (t, s) in only.iter_mut().enumerate() {
            if t != token {
                *s = -1;
            }
        }
        reference::qkv_cache(
            &case.spec,
            &qkv_layout,
            &mut x,
            kv_heads,
            host,
            None,
            (&cache_layout, &mut kr),
            (&cache_layout, &mut vr),
            HostCacheIndex::Slots(&only),
            None,
        );
        (kr, vr)
    };
    let (a, b) = (alone(0), alone(1));
    let tol = 2f64.powi(-8);
    for (data, wa, wb, what) in [(&k, &a.0, &b.0, "K"), (&v, &a.1, &b.1, "V")] {
        let got = data.read();
        for (i, &g) in got.iter().enumerate() {
            let g_value = common::decode_elem(data.dtype, g);
            let near = |w: f64| (g_value - w).abs() <= tol * w.abs() + 1e-6 * w.abs().max(1.0);
            let untouched = wa[i].to_bits()
                == common::decode_elem(data.dtype, data.bits[i]).to_bits()
                && wb[i].to_bits() == wa[i].to_bits();
            if untouched {
                assert_eq!(g, data.bits[i], "{case:?}: {what} element {i} changed");
            } else {
                assert!(
                    near(wa[i]) || near(wb[i]),
                    "{case:?}: {what} element {i} holds {g:#x} = {g_value}, neither token's \
                     ({} or {})",
                    wa[i],
                    wb[i]
                );
            }
        }
    }
}
