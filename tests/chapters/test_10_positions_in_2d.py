"""Tests for Chapter 10, "Positions beyond a line" (notebooks/10_positions_in_2d.ipynb).

Only the notebook's ``export`` cells are executed (bookkit.testing.load_chapter).
References are independent of the module under test: Chapter 5's dense ``rope_matrix``,
complex closed forms written here, hand-computed position ids, and ``transformers``'
Qwen2-VL code.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bookkit.testing import assert_holds_values, load_chapter

ch = load_chapter("10_positions_in_2d")
ch05 = load_chapter("05_deriving_rope")
ch06 = load_chapter("06_rope_in_code")

SETTINGS = settings(max_examples=50, deadline=None)
quarter_dims = st.integers(min_value=1, max_value=16).map(lambda h: 4 * h)
offsets_2d = st.tuples(st.integers(-40, 40), st.integers(-40, 40))
seeds = st.integers(min_value=0, max_value=2**32 - 1)


def complex_score(q, k, omegas, p, p_key):
    """(R(p) q) . (R(p') k) from the complex form: Re sum q_i conj(k_i) e^{i<w_i, p -
    p'>}."""
    qc, kc = q[0::2] + 1j * q[1::2], k[0::2] + 1j * k[1::2]
    return float(
        np.real(np.sum(qc * np.conj(kc) * np.exp(1j * (omegas @ (p - p_key)))))
    )


# --- the relative property of axial and mixed 2-D RoPE
# ----------------------------------


@SETTINGS
@given(d=quarter_dims, delta=offsets_2d, seed=seeds)
def test_axial_rope_is_relative_and_equals_chapter5_blocks(d, delta, seed):
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(2, d))
    p_key = rng.integers(-50, 50, size=2).astype(float)
    p = p_key + np.array(delta, dtype=float)
    omegas = ch.axial_frequencies(d)  # default base 100
    half = d // 2
    R = np.zeros((d, d))
    R[:half, :half] = ch05.rope_matrix(p[0], half, 100.0)
    R[half:, half:] = ch05.rope_matrix(p[1], half, 100.0)
    assert np.allclose(ch.multi_axis_rope_matrix(p, omegas), R, atol=1e-12)
    score = (ch.multi_axis_rope_matrix(p, omegas) @ q) @ (
        ch.multi_axis_rope_matrix(p_key, omegas) @ k
    )
    shift = rng.integers(-100, 100, size=2).astype(float)
    shifted = (
        ch.multi_axis_rope(q[None], p + shift, omegas)[0]
        @ ch.multi_axis_rope(k[None], p_key + shift, omegas)[0]
    )
    scale = np.linalg.norm(q) * np.linalg.norm(k)
    assert abs(score - complex_score(q, k, omegas, p, p_key)) <= 1e-9 * scale
    assert abs(score - shifted) <= 1e-9 * scale


@SETTINGS
@given(
    d=quarter_dims,
    delta=offsets_2d,
    seed=seeds,
    angle=st.floats(-np.pi, np.pi, allow_nan=False),
)
def test_mixed_rope_is_relative(d, delta, seed, angle):
    rng = np.random.default_rng(seed)
    omegas = ch.mixed_frequencies(d, angle)
    theta = 10.0 ** (-4 * np.arange(d // 4) / d)  # magnitudes, base 10 by default
    assert np.allclose(np.linalg.norm(omegas, axis=1), np.concatenate([theta, theta]))
    q, k = rng.normal(size=(2, d))
    p_key = rng.uniform(-30, 30, size=2)
    p = p_key + np.array(delta, dtype=float)
    score = (
        ch.multi_axis_rope(q[None], p, omegas)[0]
        @ ch.multi_axis_rope(k[None], p_key, omegas)[0]
    )
    scale = np.linalg.norm(q) * np.linalg.norm(k)
    assert abs(score - complex_score(q, k, omegas, p, p_key)) <= 1e-9 * scale


@SETTINGS
@given(d=quarter_dims, seed=seeds)
def test_axial_maps_have_zero_mixed_second_difference(d, seed):
    rng = np.random.default_rng(seed)
    q, k = rng.normal(size=(2, d))
    s = ch.score_map(q, k, ch.axial_frequencies(d), 5)
    mixed = s[1:, 1:] - s[1:, :-1] - s[:-1, 1:] + s[:-1, :-1]
    assert np.abs(mixed).max() < 1e-9 * np.linalg.norm(q) * np.linalg.norm(k)
    assert ch.interaction_share(s) < 1e-9


@pytest.mark.parametrize("alpha, beta", [(0.3, 0.7), (1.0, -0.4), (0.785, 0.785)])
def test_one_mixed_plane_has_the_closed_form_interaction(alpha, beta):
    e0 = np.array([1.0, 0.0])
    s = ch.score_map(e0, e0, np.array([[alpha, beta]]), 2)  # rows dy, columns dx
    centre = 2
    mixed = (
        s[centre + 1, centre + 1]
        - s[centre, centre + 1]
        - s[centre + 1, centre]
        + s[centre, centre]
    )
    expected = (1 - np.cos(alpha)) * (1 - np.cos(beta)) - np.sin(alpha) * np.sin(beta)
    assert np.isclose(mixed, expected)
    assert (
        ch.interaction_share(ch.score_map(e0, e0, np.array([[alpha, beta]]), 6)) > 0.1
    )


@pytest.mark.parametrize("d", [4, 16, 64])
def test_sinusoidal_2d_gram_is_a_sum_of_1d_kernels(d):
    P = ch.sinusoidal_2d(5, 7, d)
    theta = 10000.0 ** (-4 * np.arange(d // 4) / d)
    rows, cols = np.divmod(np.arange(35), 7)
    dx, dy = cols[:, None] - cols[None], rows[:, None] - rows[None]
    A = lambda delta: np.cos(delta[..., None] * theta).sum(-1)  # noqa: E731
    assert np.allclose(P @ P.T, A(dx) + A(dy))
    assert np.allclose(
        P[8, : d // 2][1::2], np.cos(1 * theta)
    )  # row 1 in the first half
    assert np.allclose(
        P[8, d // 2 :][0::2], np.sin(1 * theta)
    )  # column 1 in the second


def test_offset_spread_separates_relative_from_absolute():
    xy = ch.grid_positions(3, 4)
    relative = np.cos(xy[:, None, 0] - xy[None, :, 0]) + (
        xy[:, None, 1] - xy[None, :, 1]
    )
    assert ch.offset_spread(relative, xy) < 1e-12
    absolute = relative + xy[:, None, 0]  # depends on the query's column
    assert np.isclose(ch.offset_spread(absolute, xy), 3.0)


def test_grid_shift_error_is_zero_for_rotary_codes_and_not_for_bits():
    codes = ch.rotary_code(ch.grid_positions(10, 10), ch.axial_frequencies(8))
    assert ch.grid_shift_error(codes, 10, 10, (1, 1)) < 1e-9
    xy = ch.grid_positions(10, 10).astype(int)
    bits = np.hstack([(xy[:, :1] >> np.arange(4)) & 1, (xy[:, 1:] >> np.arange(4)) & 1])
    assert ch.grid_shift_error(bits, 10, 10, (1, 0)) > 0.1  # binary codes jump (Ch. 2)


# --- M-RoPE position ids against transformers
# ---------------------------------------------

LAYOUTS = {
    "notes example": [("text", 4), ("image", (1, 4, 6)), ("text", 2)],
    "image first": [("image", (1, 6, 4)), ("text", 3)],
    "two images": [
        ("text", 2),
        ("image", (1, 2, 2)),
        ("text", 2),
        ("image", (1, 8, 4)),
        ("text", 1),
    ],
    "video and image": [
        ("text", 1),
        ("video", (2, 6, 8)),
        ("text", 2),
        ("image", (1, 4, 4)),
        ("text", 1),
    ],
    "long thin video": [("text", 3), ("video", (3, 4, 4)), ("text", 2)],
    "text only": [("text", 5)],
    "merge 1": [("text", 1), ("image", (1, 3, 2)), ("text", 1)],
}


@pytest.fixture(scope="module")
def tiny():
    return {merge: ch.tiny_qwen2vl(spatial_merge_size=merge) for merge in (1, 2)}


@pytest.fixture(scope="module")
def tiny25():
    return ch.tiny_qwen25vl()


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_position_ids_equal_transformers(name, tiny):
    """transformers 5.23 restarts text at m + max(h', w'): the labelled 5.x rule."""
    layout = LAYOUTS[name]
    merge = 1 if name == "merge 1" else 2
    inputs = ch.transformers_inputs(layout, merge)
    theirs, _ = tiny[merge].get_rope_index(**inputs)
    ours = ch.mrope_position_ids(layout, merge, restart="transformers5")
    assert np.array_equal(ours, theirs[:, 0].numpy())
    paper = ch.mrope_position_ids(layout, merge)
    long_video = name == "long thin video"  # 3 temporal patches, 2 x 2 tokens each
    assert np.array_equal(paper, theirs[:, 0].numpy()) != long_video


def test_position_ids_by_hand():
    ids = ch.mrope_position_ids(LAYOUTS["notes example"])  # default merge 2
    assert ids.tolist() == [
        [0, 1, 2, 3, 4, 4, 4, 4, 4, 4, 7, 8],
        [0, 1, 2, 3, 4, 4, 4, 5, 5, 5, 7, 8],
        [0, 1, 2, 3, 4, 5, 6, 4, 5, 6, 7, 8],
    ]
    video = LAYOUTS["long thin video"]
    paper = ch.mrope_position_ids(video)  # default: the paper's rule
    v5 = ch.mrope_position_ids(video, restart="transformers5")
    assert paper[0].tolist() == [0, 1, 2] + [3] * 4 + [4] * 4 + [5] * 4 + [6, 7]
    assert paper[1, 3:15].tolist() == [3, 3, 4, 4] * 3
    assert paper[2, 3:15].tolist() == [3, 4] * 6
    assert v5[0, -2:].tolist() == [5, 6]  # m + max(h', w') = 3 + 2
    assert np.array_equal(paper[:, :-2], v5[:, :-2])


@pytest.mark.parametrize(
    "layout",
    [
        [("text", 3), ("video", (6, 4, 4))],
        [("text", 2), ("image", (1, 4, 6))],
        [("text", 1), ("video", (2, 6, 8)), ("text", 2), ("video", (5, 2, 2))],
    ],
)
def test_rope_deltas_of_transformers_follow_the_papers_rule(layout, tiny):
    """transformers' rope_deltas place the next token one past the largest id: the id
    the paper's rule gives text that follows the prompt."""
    _, deltas = tiny[2].get_rope_index(**ch.transformers_inputs(layout))
    ours = ch.mrope_position_ids(layout + [("text", 1)])
    n_tokens = ours.shape[1] - 1
    assert n_tokens + int(deltas) == ours[0, -1] == ours[:, -1].max()


@pytest.mark.parametrize(
    "layout, seconds",
    [
        ([("text", 2), ("video", (4, 4, 4)), ("text", 2)], [2 / 3]),
        (
            [
                ("text", 1),
                ("video", (3, 4, 6)),
                ("text", 2),
                ("video", (2, 2, 2)),
                ("text", 1),
            ],
            [1.0, 0.5],
        ),
        (
            [
                ("text", 1),
                ("image", (1, 4, 4)),
                ("text", 1),
                ("video", (5, 2, 4)),
                ("text", 1),
            ],
            [2.0],
        ),
        ([("video", (7, 2, 2)), ("text", 1)], [0.7]),
        ([("text", 1), ("video", (9, 4, 2)), ("text", 1)], [0.3]),
    ],
)
def test_time_aligned_ids_equal_qwen25vl(layout, seconds, tiny25):
    """Qwen2.5-VL: temporal ids floor(k * tokens_per_second * seconds) in float32."""
    tps = tiny25.config.vision_config.tokens_per_second
    theirs, deltas = tiny25.get_rope_index(
        **ch.transformers_inputs(layout), second_per_grid_ts=torch.tensor(seconds)
    )
    timing = dict(tokens_per_second=tps, second_per_grid_ts=seconds)
    ours = ch.mrope_position_ids(layout, restart="transformers5", **timing)
    assert np.array_equal(ours, theirs[:, 0].numpy())
    assert ours.shape[1] + int(deltas) == ours.max() + 1  # rope_deltas: max id + 1
    without = ch.mrope_position_ids(layout, tokens_per_second=tps)  # 1 s per patch
    theirs_without, _ = tiny25.get_rope_index(**ch.transformers_inputs(layout))
    assert np.array_equal(
        ch.mrope_position_ids(layout, restart="transformers5", tokens_per_second=tps),
        theirs_without[:, 0].numpy(),
    )
    assert without.shape == ours.shape


def test_time_aligned_ids_by_hand():
    ids = ch.mrope_position_ids(
        [("text", 2), ("video", (4, 2, 2)), ("text", 1)],
        tokens_per_second=2,
        second_per_grid_ts=[2 / 3],
    )
    assert ids[0, 2:].tolist() == [
        2,
        3,
        4,
        6,
        7,
    ]  # steps 0, 1.33, 2.67, 4 -> 0, 1, 2, 4
    assert ids[1, 2:6].tolist() == [2] * 4 and ids[2, 2:6].tolist() == [2] * 4
    images_ignore_time = ch.mrope_position_ids(
        [("image", (1, 2, 2)), ("text", 1), ("video", (2, 2, 2))],
        tokens_per_second=25,
        second_per_grid_ts=[1.0],
    )
    assert images_ignore_time[0].tolist() == [0, 1, 2, 27]  # the video's step is 25
    assert np.array_equal(  # Qwen2-VL: a step of 1 per temporal patch
        ch.mrope_position_ids([("video", (3, 2, 2))])[0], [0, 1, 2]
    )


def padded_layouts():
    return [
        LAYOUTS["notes example"],
        LAYOUTS["long thin video"],
        LAYOUTS["text only"],
        LAYOUTS["video and image"],
    ]


def test_padded_batch_equals_transformers(tiny):
    batch = padded_layouts()
    padded = ch.transformers_batch(batch)
    theirs, deltas = tiny[2].get_rope_index(**padded)
    masks = padded["attention_mask"].numpy()
    assert masks.shape == (4, 32) and masks.sum(axis=1).tolist() == [12, 17, 5, 32]
    assert all(m[: m.size - m.sum()].sum() == 0 for m in masks)  # left padding
    ours = np.stack(
        [
            ch.mrope_position_ids(layout, restart="transformers5", attention_mask=mask)
            for layout, mask in zip(batch, masks)
        ],
        axis=1,
    )
    assert np.array_equal(ours, theirs.numpy())
    assert np.all(ours[:, ~masks.astype(bool)] == 0)  # padding: 0, as in transformers 5
    grids = padded["image_grid_thw"].tolist()
    assert grids == [[1, 4, 6], [1, 4, 4]]  # in order of appearance over the batch
    assert padded["video_grid_thw"].tolist() == [[3, 4, 4], [2, 6, 8]]
    assert deltas.shape == (4, 1)


def test_padded_batch_equals_qwen25vl(tiny25):
    batch = [
        ([("text", 2), ("video", (4, 4, 4)), ("text", 2)], [2 / 3]),
        ([("text", 4)], []),
        (
            [("video", (2, 2, 2)), ("text", 1), ("video", (3, 2, 4)), ("text", 2)],
            [0.5, 1.5],
        ),
    ]
    padded = ch.transformers_batch([layout for layout, _ in batch])
    flat = [s for _, seconds in batch for s in seconds]
    theirs, _ = tiny25.get_rope_index(**padded, second_per_grid_ts=torch.tensor(flat))
    tps = tiny25.config.vision_config.tokens_per_second
    ours = np.stack(
        [
            ch.mrope_position_ids(
                layout,
                restart="transformers5",
                attention_mask=mask,
                tokens_per_second=tps,
                second_per_grid_ts=seconds or None,
            )
            for (layout, seconds), mask in zip(batch, padded["attention_mask"].numpy())
        ],
        axis=1,
    )
    assert np.array_equal(ours, theirs.numpy())


def test_qwen3vl_layout_with_timestamps_equals_transformers():
    model = ch.tiny_qwen3vl()
    layout = [("text", 1)]
    for _ in range(4):
        layout += [("text", 6), ("video", (1, 2, 4)), ("text", 1)]
    layout += [("text", 3)]
    inputs = ch.transformers_inputs(layout)
    inputs["video_grid_thw"] = torch.tensor([[4, 2, 4]])  # one video, 4 patches
    theirs, _ = model.get_rope_index(**inputs)
    for restart in ch.RESTART_RULES:  # t = 1 per segment: both rules agree
        assert np.array_equal(
            ch.mrope_position_ids(layout, restart=restart), theirs[:, 0].numpy()
        )
    cfg = model.config.text_config
    assert cfg.rope_parameters["mrope_interleaved"] is True


def test_attention_mask_places_ids_on_the_ones():
    ids = ch.mrope_position_ids(
        [("text", 2), ("image", (1, 2, 2)), ("text", 1)],
        attention_mask=[0, 0, 1, 1, 1, 1],
    )
    assert ids.tolist() == [[0, 0, 0, 1, 2, 3]] * 3
    right = ch.mrope_position_ids([("text", 3)], attention_mask=np.array([1, 1, 1, 0]))
    assert right[0].tolist() == [0, 1, 2, 0]  # right padding works as well
    boolean = ch.mrope_position_ids([("text", 2)], attention_mask=[False, True, True])
    assert boolean[0].tolist() == [0, 0, 1]


# --- M-RoPE rotation against transformers
# ---------------------------------------------------


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(
    "name", ["notes example", "video and image", "long thin video"]
)
def test_mrope_rotation_equals_transformers_within_rounding(dtype, name, tiny):
    from transformers.models.qwen2_vl.modeling_qwen2_vl import (
        Qwen2VLRotaryEmbedding,
        apply_rotary_pos_emb,
    )

    position_ids = torch.from_numpy(ch.mrope_position_ids(LAYOUTS[name]))[:, None]
    generator = torch.Generator().manual_seed(3)
    q = torch.randn(1, 4, position_ids.shape[-1], 16, generator=generator, dtype=dtype)
    k = torch.randn(q.shape, generator=generator, dtype=dtype)
    cos, sin = Qwen2VLRotaryEmbedding(tiny[2].config.text_config)(q, position_ids)
    q_hf, k_hf = apply_rotary_pos_emb(q, k, cos, sin)
    # float32 angles on both sides: 2 (6 + ln b) u per radian (see rotation_bound)
    gap = 2 * (6 + np.log(1e4)) * 2.0**-24 * float(position_ids.max())
    got_q = ch.apply_mrope(q, position_ids, [2, 3, 3])  # default base
    got_k = ch.apply_mrope(k, position_ids, (2, 3, 3), 10000.0)
    assert torch.all((got_q - q_hf).abs() <= ch.rotation_bound(q, gap))
    assert torch.all((got_k - k_hf).abs() <= ch.rotation_bound(k, gap))


def test_rotation_bound_by_hand():
    x = torch.tensor([[1.0, -2.0, 3.0, 0.5]])  # pairs (1, 3) and (-2, 0.5)
    u = 2.0**-24
    gamma2 = 2 * u / (1 - 2 * u)
    bound = ch.rotation_bound(x, angle_gap=1e-6)
    factor = 1e-6 + 8 * u + 2 * gamma2
    expected = torch.tensor(
        [[4 * factor, 2.5 * factor, 4 * factor, 2.5 * factor]], dtype=torch.float64
    )
    torch.testing.assert_close(bound, expected, rtol=1e-12, atol=0)
    coarse = ch.rotation_bound(x.to(torch.bfloat16))  # cos cast to bfloat16: 2 u_bf
    u_bf = 2.0**-8
    assert coarse[0, 0].item() == pytest.approx(
        4 * (8 * u + 2 * u_bf + 2 * 2 * u_bf / (1 - 2 * u_bf)), rel=1e-12
    )
    for bad in (torch.ones(3), torch.ones(2, 2, dtype=torch.long), np.ones(4)):
        with pytest.raises(ValueError, match="even"):
            ch.rotation_bound(bad)
    with pytest.raises(ValueError, match="angle_gap"):
        ch.rotation_bound(x, angle_gap=-1.0)


@SETTINGS
@given(seed=seeds, ids=st.integers(1, 3000))
def test_rotation_bound_covers_float32_against_float64(seed, ids):
    """Float32 angles and tables against float64: within the stated bound."""
    generator = torch.Generator().manual_seed(seed % 2**31)
    x = torch.randn(1, 2, 6, 16, generator=generator)
    position_ids = torch.randint(0, ids, (3, 1, 6), generator=generator)
    got = ch.apply_mrope(x, position_ids, [2, 3, 3])
    exact = ch.apply_mrope(
        x.double(), position_ids, [2, 3, 3], angle_dtype=torch.float64
    )
    gap = (6 + np.log(1e4)) * 2.0**-24 * float(position_ids.max())  # one side rounds
    assert torch.all((got.double() - exact).abs() <= ch.rotation_bound(x, gap))


def test_axis_allocations_equal_transformers():
    from types import SimpleNamespace

    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLRotaryEmbedding
    from transformers.models.qwen3_vl.modeling_qwen3_vl import (
        Qwen3VLTextRotaryEmbedding,
    )

    marked = torch.arange(3.0)[:, None, None, None].expand(3, 1, 1, 64).clone()
    for cls, sections, layout in [
        (Qwen2VLRotaryEmbedding, [16, 24, 24], "sections"),
        (Qwen3VLTextRotaryEmbedding, [24, 20, 20], "interleaved"),
    ]:
        out = cls.recomposition_frequencies(
            SimpleNamespace(mrope_section=sections), marked.clone()
        )
        expected = out[0, 0, :64].long().numpy()
        assert np.array_equal(
            ch.mrope_axis_of_pairs(sections, 128, layout=layout), expected
        )
    assert (
        ch.mrope_axis_of_pairs([16, 24, 24], 128).tolist()
        == [0] * 16 + [1] * 24 + [2] * 24
    )


def test_mrope_is_rope_for_text_and_relative_in_3d():
    omegas = ch.mrope_frequency_vectors([2, 3, 3], 16)
    theta = 10000.0 ** (-np.arange(0, 16, 2) / 16)
    assert np.allclose(omegas.sum(axis=1), theta) and np.count_nonzero(omegas) == 8
    ids = ch.mrope_position_ids([("text", 4)]).T.astype(float)
    for m, p in enumerate(ids):
        assert np.allclose(
            ch.multi_axis_rope_matrix(p, omegas), ch05.rope_matrix(m, 16)
        )
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 16))
    p, p_key, shift = rng.integers(-20, 20, size=(3, 3)).astype(float)
    assert np.isclose(
        complex_score(q, k, omegas, p, p_key),
        complex_score(q, k, omegas, p + shift, p_key + shift),
    )


# --- bad input
# ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "sections, head_dim, message",
    [
        ([2, 3, 3], 15, "even"),
        ([2, 3, 3], 18, "sums to 8"),
        ([2, 3], 16, "three"),
        ([2, 3, 3.0], 16, "three"),
        ([-1, 5, 4], 16, "three"),
    ],
)
def test_bad_sections_raise(sections, head_dim, message):
    with pytest.raises(ValueError, match=message):
        ch.mrope_axis_of_pairs(sections, head_dim)
    with pytest.raises(ValueError, match=message):
        ch.apply_mrope(torch.zeros(1, 1, 2, head_dim), torch.zeros(3, 1, 2), sections)


@pytest.mark.parametrize(
    "layout, message",
    [
        ([("image", (1, 0, 4))], "positive"),
        ([("image", (1, 4, -2))], "positive"),
        ([("video", (0, 4, 4))], "positive"),
        ([("text", 0)], "positive"),
        ([("image", (1, 3, 4))], "multiples"),
        ([("image", (1, 4))], r"\(t, h, w\)"),
        ([("image", (1, 2, 2)), ("video", (1, 2, 2))], "between"),
        ([("audio", 3)], "kind"),
        ([], "empty"),
    ],
)
def test_bad_layouts_raise(layout, message):
    with pytest.raises(ValueError, match=message):
        ch.mrope_position_ids(layout)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(restart="max"), "restart"),
        (dict(second_per_grid_ts=[1.0]), "needs tokens_per_second"),
        (
            dict(tokens_per_second=2, second_per_grid_ts=[1.0, 2.0]),
            "2 entries for 1 video",
        ),
        (dict(tokens_per_second=2, second_per_grid_ts=[0.0]), "positive"),
        (dict(tokens_per_second=-1), "positive"),
        (dict(tokens_per_second=float("nan")), "positive"),
        (dict(tokens_per_second=True), "positive"),
        (dict(attention_mask=[1, 1, 1]), "3 ones but the layout has 5"),
        (dict(attention_mask=[[1, 1, 1, 1, 1]]), "one row"),
        (dict(attention_mask=[1, 1, 2, 1, 1]), "one row"),
        (dict(spatial_merge_size=0), "spatial_merge_size"),
    ],
)
def test_bad_options_raise(kwargs, message):
    layout = [("text", 1), ("video", (2, 2, 2)), ("text", 2)]  # 5 tokens
    with pytest.raises(ValueError, match=message):
        ch.mrope_position_ids(layout, **kwargs)


def test_other_bad_input_raises():
    with pytest.raises(ValueError, match="positive"):
        ch.grid_positions(0, 3)
    with pytest.raises(ValueError, match="positive"):
        ch.grid_positions(3, -1)
    for bad_d in (6, 2, 10):
        with pytest.raises(ValueError, match="multiple of 4"):
            ch.sinusoidal_2d(3, 3, bad_d)
        with pytest.raises(ValueError, match="multiple of 4"):
            ch.axial_frequencies(bad_d)
    with pytest.raises(ValueError, match="axes"):
        ch.multi_axis_angles(np.zeros((2, 3)), np.ones((4, 2)))
    with pytest.raises(ValueError, match="shape"):
        ch.apply_mrope(torch.zeros(1, 1, 2, 16), torch.zeros(3, 2), [2, 3, 3])
    with pytest.raises(ValueError, match="constant"):
        ch.interaction_share(np.ones((3, 3)))


# --- learned commuting rotations are multi-axis RoPE in another basis
# ----------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_commuting_generators_are_rope_in_another_basis(seed):
    from scipy.linalg import expm
    from scipy.stats import special_ortho_group

    rng = np.random.default_rng(seed)
    d, axes = 10, 3
    true_O = special_ortho_group.rvs(d, random_state=seed)
    true_Omega = rng.normal(size=(d // 2, axes))
    Gs = [
        true_O @ ch.multi_axis_rope_generator(true_Omega[:, a]) @ true_O.T
        for a in range(axes)
    ]
    basis, Omega = ch.common_rotation_basis(Gs, seed=seed)
    assert np.abs(basis.T @ basis - np.eye(d)).max() < 1e-12
    p = rng.uniform(-5, 5, size=axes)
    learned = expm(sum(c * G for c, G in zip(p, Gs)))
    # float64 mathematics: exponentials of norm < 40 round to ~1e-12; a wrong basis or
    # frequency is off by O(1)
    in_basis = basis @ ch.multi_axis_rope_matrix(p, Omega) @ basis.T
    assert np.abs(learned - in_basis).max() < 1e-9
    # the recovered frequencies are the true ones, up to order and the sign of a plane
    found = sorted(map(tuple, np.round(np.abs(Omega), 8)))
    assert found == sorted(map(tuple, np.round(np.abs(true_Omega), 8)))


def test_circulant_generators_commute_and_are_skew():
    rng = np.random.default_rng(4)
    G1, G2 = (ch.circulant_generator(rng.normal(size=6)) for _ in range(2))
    assert np.array_equal(G1, -G1.T)  # C - C^T: exactly antisymmetric
    assert np.abs(G1 @ G2 - G2 @ G1).max() < 1e-12
    assert ch.circulant_generator([0.0, 1.0, 0.0, 0.0])[1, 0] == 1.0  # C[1, 0] = c_1
    _, Omega = ch.common_rotation_basis([G1, G2])
    assert Omega.shape == (3, 2)
    assert np.abs(Omega).min(axis=1).min() < 1e-12  # the constant/alternating plane
    for bad in ([1.0, 2.0, 3.0], [[1.0, 2.0]], [1.0]):
        with pytest.raises(ValueError, match="even"):
            ch.circulant_generator(bad)


def test_common_rotation_basis_rejects_what_has_none():
    rng = np.random.default_rng(5)
    A, B = (M - M.T for M in rng.normal(size=(2, 6, 6)))
    with pytest.raises(ValueError, match="do not commute"):
        ch.common_rotation_basis([A, B])
    with pytest.raises(ValueError, match="skew"):
        ch.common_rotation_basis([A + np.eye(6)])
    with pytest.raises(ValueError, match="even size"):
        ch.common_rotation_basis([np.zeros((3, 3))])
    with pytest.raises(ValueError, match="even size"):
        ch.common_rotation_basis([A, np.zeros((4, 4))])
    M = rng.normal(size=(8, 8))
    single = (M - M.T) / 2  # exactly antisymmetric; one generator: nothing to commute
    ch.common_rotation_basis([single])
    with pytest.raises(ValueError, match="planes"):  # tol 0: no rounding is forgiven
        ch.common_rotation_basis([single], tol=0.0)


def test_multi_axis_rope_generator_exponentiates_to_the_rope_matrix():
    from scipy.linalg import expm

    omega = np.array([[0.3, -1.0], [2.0, 0.5]])
    for p in ([1.0, 2.0], [-3.0, 0.5]):
        G = sum(c * ch.multi_axis_rope_generator(omega[:, a]) for a, c in enumerate(p))
        assert (
            np.abs(expm(G) - ch.multi_axis_rope_matrix(np.array(p), omega)).max()
            < 1e-12
        )


# --- the vision encoder's 2-D RoPE
# ------------------------------------------------------------


def test_vision_rope_of_qwen2vl_is_axial_rope_rows_first():
    from transformers.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLVisionConfig
    from transformers.models.qwen2_vl.modeling_qwen2_vl import (
        Qwen2VLVisionRotaryEmbedding,
    )

    config = Qwen2VLVisionConfig(embed_dim=64, num_heads=2)  # head_dim 32
    rope = Qwen2VLVisionRotaryEmbedding(config)
    rows_cols = torch.tensor([[r, c] for r in range(3) for c in range(4)])
    cos, sin = rope(torch.zeros(1), rows_cols)
    omega = ch.axial_frequencies(32, 10000.0)
    omega = np.vstack([omega[8:], omega[:8]])  # rows (y) first
    angles = ch.multi_axis_angles(rows_cols.flip(-1).double().numpy(), omega)
    bound = (6 + np.log(1e4)) * 2.0**-24 * 3.0 + 4 * 2.0**-24
    assert np.abs(cos[:, :16].double().numpy() - np.cos(angles)).max() <= bound
    assert np.abs(sin[:, :16].double().numpy() - np.sin(angles)).max() <= bound


# --- the exercise checks reject wrong answers and accept right ones
# ------------------------


def axial_good(x, xy, base=100.0):
    x, xy = np.asarray(x, float), np.asarray(xy, float)
    d = x.shape[1]
    if d % 4:
        raise ValueError("d must be a multiple of 4")
    out = np.empty_like(x)
    for row in range(len(x)):
        out[row, : d // 2] = (
            ch05.rope_matrix(xy[row, 0], d // 2, base) @ x[row, : d // 2]
        )
        out[row, d // 2 :] = (
            ch05.rope_matrix(xy[row, 1], d // 2, base) @ x[row, d // 2 :]
        )
    return out


def axial_float32(x, xy, base=100.0):
    """A correct answer computed in float32 with torch, vectorised."""
    x = torch.as_tensor(np.asarray(x), dtype=torch.float32)
    xy = torch.as_tensor(np.asarray(xy), dtype=torch.float32)
    d = x.shape[1]
    if d % 4:
        raise ValueError("d must be a multiple of 4")
    theta = base ** (-torch.arange(0, d // 2, 2, dtype=torch.float32) / (d // 2))
    angles = torch.cat([xy[:, :1] * theta, xy[:, 1:] * theta], dim=1)
    c, s = angles.cos(), angles.sin()
    out = torch.empty_like(x)
    out[:, 0::2] = x[:, 0::2] * c - x[:, 1::2] * s
    out[:, 1::2] = x[:, 1::2] * c + x[:, 0::2] * s
    return out


def test_check_axial_rope(capsys):
    ch.check_axial_rope(axial_good)
    assert "All 8 checks passed." in capsys.readouterr().out
    ch.check_axial_rope(axial_float32)  # float32 answers pass
    wrong = {
        "swapped": lambda x, xy, base=100.0: axial_good(
            x, np.asarray(xy)[:, ::-1], base
        ),
        "wrong way": lambda x, xy, base=100.0: axial_good(
            x, -np.asarray(xy, float), base
        ),
        "dimension d": lambda x, xy, base=100.0: _axial_full_d(x, xy, base),
        "default base is 10 000": lambda x, xy, base=10000.0: axial_good(x, xy, base),
    }
    for hint, candidate in wrong.items():
        with pytest.raises(AssertionError, match=hint) as info:
            ch.check_axial_rope(candidate)
        assert str(info.value).startswith("Exercise 10.2")

    def no_validation(x, xy, base=100.0):
        return axial_good(np.asarray(x)[:, :4] if np.shape(x)[1] == 6 else x, xy, base)

    with pytest.raises(AssertionError, match="a ValueError"):
        ch.check_axial_rope(no_validation)

    def vague(x, xy, base=100.0):
        if np.shape(x)[1] % 4:
            raise ValueError("bad d")
        return axial_good(x, xy, base)

    with pytest.raises(AssertionError, match="multiple of 4"):
        ch.check_axial_rope(vague)

    expected = {}  # a hard-coded answer for the literal cases fails the composition law

    def hard_coded(x, xy, base=100.0):
        key = (np.asarray(x).tobytes(), np.asarray(xy).tobytes(), base)
        if key not in expected:
            expected[key] = axial_good(x, xy, base) if np.shape(x)[1] != 12 else x
        return expected[key]

    with pytest.raises(AssertionError, match="turn by x and y"):
        ch.check_axial_rope(hard_coded)


def _axial_full_d(x, xy, base):
    """The mistake 'frequencies of dimension d': theta_j = base**(-2j/d), j < d/4."""
    x, xy = np.asarray(x, float), np.asarray(xy, float)
    d = x.shape[1]
    theta = base ** (-np.arange(0, d // 2, 2) / d)
    angles = np.concatenate([xy[:, :1] * theta, xy[:, 1:] * theta], axis=1)
    c, s = np.cos(angles), np.sin(angles)
    out = np.empty_like(x)
    out[:, 0::2] = x[:, 0::2] * c - x[:, 1::2] * s
    out[:, 1::2] = x[:, 1::2] * c + x[:, 0::2] * s
    return out


def image_good(start, grid, merge=2):
    t, h, w = grid
    if h % merge or w % merge:
        raise ValueError("h and w must be multiples of the merge size")
    ids = np.array(
        [
            [start + f, start + r, start + c]
            for f in range(t)
            for r in range(h // merge)
            for c in range(w // merge)
        ]
    ).T
    return ids, int(ids.max()) + 1


def test_check_image_position_ids(capsys):
    ch.check_image_position_ids(image_good)
    assert "All 19 checks passed." in capsys.readouterr().out
    wrong = {
        "merge was forgotten": lambda s, g, m=2: image_good(s, g, 1),
        "swapped": lambda s, g, m=2: (
            image_good(s, g, m)[0][[0, 2, 1]],
            image_good(s, g, m)[1],
        ),
        "off by one": lambda s, g, m=2: (
            image_good(s, g, m)[0],
            image_good(s, g, m)[1] + 1,
        ),
        "largest id itself": lambda s, g, m=2: (
            image_good(s, g, m)[0],
            image_good(s, g, m)[1] - 1,
        ),
        "number of tokens": lambda s, g, m=2: (
            image_good(s, g, m)[0],
            s + image_good(s, g, m)[0].shape[1],
        ),
        "rule of transformers 5": lambda s, g, m=2: (
            image_good(s, g, m)[0],
            s + max(g[1], g[2]) // m,
        ),
        "without spatial_merge_size, use 2": lambda s, g, m=1: image_good(s, g, m),
    }
    for hint, candidate in wrong.items():
        with pytest.raises(AssertionError, match=hint) as info:
            ch.check_image_position_ids(candidate)
        assert str(info.value).startswith("Exercise 10.3")

    def no_validation(start, grid, merge=2):
        t, h, w = grid
        return image_good(start, (t, h - h % merge, w - w % merge), merge)

    with pytest.raises(AssertionError, match="a ValueError"):
        ch.check_image_position_ids(no_validation)

    def as_lists(start, grid, merge=2):  # a correct answer written differently
        ids, next_id = image_good(start, grid, merge)
        return ids.tolist(), np.int64(next_id)

    ch.check_image_position_ids(as_lists)


# --- the kernels and maps the figures draw, against closed forms
# -------------------------


def test_cosine_kernel_and_offsets_by_hand():
    d = 8
    theta = 10000.0 ** (-np.arange(0, d, 2) / d)  # default base
    delta = np.array([0.0, 1.0, -3.0, 17.5])
    expected = np.cos(delta[:, None] * theta).sum(-1)
    np.testing.assert_allclose(ch.cosine_kernel(delta, d), expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        ch.cosine_kernel(2.0, 4, base=100.0),
        np.cos(2.0) + np.cos(0.2),
        rtol=0,
        atol=1e-12,
    )
    p = np.array([[0.0, 1.0], [3.0, -2.0], [5.0, 5.0]])
    got = ch.offsets(p)
    assert got.shape == (3, 3, 2)
    assert got[1, 0].tolist() == [3.0, -3.0] and got[0, 2].tolist() == [-5.0, -4.0]
    assert np.all(got[np.arange(3), np.arange(3)] == 0)
    with pytest.raises(ValueError, match="shape"):
        ch.offsets(np.arange(3.0))


@pytest.mark.parametrize(
    "height, width, query", [(5, 7, (2, 3)), (4, 6, (0, 0)), (6, 3, (2, 5))]
)
def test_query_score_maps_closed_forms(height, width, query):
    d, angle = 16, 0.5  # the defaults are d = 64, angle = 0.5; d = 16 keeps it small
    maps = ch.query_score_maps(height, width, query, d)
    x0, y0 = query
    rows, cols = np.mgrid[0:height, 0:width]
    dx, dy = cols - x0, rows - y0
    j = np.arange(d // 4)

    def kernel(delta, base):  # sum_j cos(delta theta'_j), theta'_j = base**(-4j/d)
        return np.cos(delta[..., None] * base ** (-4 * j / d)).sum(-1)

    # q = k = (1, 0, 1, 0, ...): every score is a sum of cosines of the angle
    # differences
    np.testing.assert_allclose(
        maps["2-D sinusoidal"], kernel(dx, 1e4) + kernel(dy, 1e4), atol=1e-10, rtol=0
    )
    np.testing.assert_allclose(
        maps["axial RoPE"], kernel(dx, 100.0) + kernel(dy, 100.0), atol=1e-10, rtol=0
    )
    magnitude = 10.0 ** (-4 * j / d)
    mixed = sum(
        np.cos(magnitude[:, None, None] * (np.cos(a) * dx + np.sin(a) * dy)).sum(0)
        for a in (angle, angle + np.pi / 2)
    )
    np.testing.assert_allclose(maps["mixed RoPE"], mixed, atol=1e-10, rtol=0)
    with pytest.raises(ValueError, match="outside"):
        ch.query_score_maps(height, width, (width, 0), d)


def test_query_score_maps_defaults():
    maps = ch.query_score_maps(3, 4, (1, 2))  # d = 64, angle = 0.5
    assert maps["axial RoPE"][2, 1] == pytest.approx(32.0)  # the query with itself: d/2
    other = ch.query_score_maps(3, 4, (1, 2), d=64, angle=0.5)
    assert all(np.array_equal(maps[k], other[k]) for k in maps)
    assert not np.allclose(
        maps["mixed RoPE"],
        ch.query_score_maps(3, 4, (1, 2), d=64, angle=0.0)["mixed RoPE"],
    )
    assert not np.allclose(
        maps["axial RoPE"], ch.query_score_maps(3, 4, (1, 2), d=32)["axial RoPE"] * 2
    )


# --- the tiny Qwen2-VL keeps its promises
# -------------------------------------------------


def test_tiny_qwen2vl_is_the_promised_model(tiny):
    model = tiny[2]  # default mrope_section (2, 3, 3)
    text, vision = model.config.text_config, model.config.vision_config
    assert text.num_hidden_layers == 1 and len(model.language_model.layers) == 1
    assert text.num_attention_heads == text.num_key_value_heads == 4
    assert text.hidden_size == 4 * 16  # four heads of head_dim 16
    assert text.rope_parameters["rope_theta"] == 10000.0
    assert list(text.rope_parameters["mrope_section"]) == [2, 3, 3]
    assert vision.depth == 1 and vision.spatial_merge_size == 2
    assert tiny[1].config.vision_config.spatial_merge_size == 1
    assert not model.training
    # the token ids transformers_inputs writes are the ones the config declares
    inputs = ch.transformers_inputs(
        [
            ("text", 2),
            ("image", (1, 2, 4)),
            ("text", 1),
            ("video", (2, 2, 2)),
            ("text", 1),
        ]
    )
    ids, types = (
        inputs["input_ids"][0].tolist(),
        inputs["mm_token_type_ids"][0].tolist(),
    )
    assert ids.count(model.config.image_token_id) == 2 == types.count(1)
    assert ids.count(model.config.video_token_id) == 2 == types.count(2)
    assert inputs["image_grid_thw"].tolist() == [[1, 2, 4]]
    assert inputs["video_grid_thw"].tolist() == [[2, 2, 2]]
    assert ch.transformers_inputs([("text", 3)])["image_grid_thw"] is None
    sections = ch.tiny_qwen2vl((4, 2, 2)).config.text_config.rope_parameters
    assert list(sections["mrope_section"]) == [4, 2, 2]


def test_tiny_qwen2vl_runs_an_image_through_both_towers(tiny):
    model = tiny[2]
    layout = [("text", 2), ("image", (1, 4, 4)), ("text", 1)]
    inputs = ch.transformers_inputs(layout)
    vision = model.config.vision_config
    patch = vision.in_channels * vision.temporal_patch_size * vision.patch_size**2
    pixels = torch.randn(16, patch, generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        out = model(**inputs, pixel_values=pixels)
    assert out.last_hidden_state.shape == (1, 7, 64)
    assert torch.isfinite(out.last_hidden_state).all()


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_mrope_on_text_is_chapter6_rope(dtype):
    """Three equal ids (text tokens) make M-RoPE plain RoPE, whatever the sections:
    Chapter 6's apply_rope_halves, within the rounding bound of two rotations whose
    angles are computed alike (angle_gap 0) but whose cos and sin see other shapes."""
    generator = torch.Generator().manual_seed(5)
    x = torch.randn(2, 3, 7, 16, generator=generator).to(dtype)
    positions = torch.randint(0, 5000, (2, 7), generator=generator)
    ids = positions.expand(3, 2, 7)
    expected = ch06.apply_rope_halves(
        x.float() if dtype == torch.bfloat16 else x, positions
    )
    for sections in ([2, 3, 3], [8, 0, 0], [1, 1, 6]):
        got = ch.apply_mrope(x, ids, sections, angle_dtype=torch.float32)
        assert got.dtype == dtype
        if dtype == torch.float64:  # float32 angles here, float64 in Chapter 6
            gap = (6 + np.log(1e4)) * 2.0**-24 * 5000.0
            bound = ch.rotation_bound(x, gap)
            assert torch.all((got - expected).abs() <= bound)
            exact = ch.apply_mrope(x, ids, sections, angle_dtype=torch.float64)
            bound64 = ch.rotation_bound(x, 0.0, table_dtype=torch.float64)
            assert torch.all((exact - expected).abs() <= bound64)
        else:
            bound = ch.rotation_bound(x, 0.0)
            assert torch.all((got.double() - expected.double()).abs() <= bound)
    assert torch.equal(
        ch.apply_mrope(x, ids, [2, 3, 3], base=500.0),  # same tensors,
        ch.apply_mrope(x, ids, [4, 2, 2], base=500.0),
    )  # same operations


@pytest.mark.parametrize(
    "call, message",
    [
        (
            lambda: ch.multi_axis_rope(
                np.zeros((3, 8)), np.zeros((2, 2)), ch.axial_frequencies(8)
            ),
            "x must be",
        ),
        (
            lambda: ch.multi_axis_rope(
                np.zeros((2, 12)), np.zeros((2, 2)), ch.axial_frequencies(8)
            ),
            "x must be",
        ),
        (
            lambda: ch.multi_axis_rope(
                np.zeros(8), np.zeros((1, 2)), ch.axial_frequencies(8)
            ),
            "x must be",
        ),
        (
            lambda: ch.multi_axis_rope_matrix(
                np.zeros((2, 2)), ch.axial_frequencies(8)
            ),
            "one position",
        ),
        (
            lambda: ch.multi_axis_angles(np.zeros((1, 2)), np.zeros((0, 2))),
            "omegas must have",
        ),
        (
            lambda: ch.multi_axis_angles(np.zeros((1, 2)), np.zeros(4)),
            "omegas must have",
        ),
        (
            lambda: ch.multi_axis_angles(np.zeros((1, 2)), np.full((2, 2), np.nan)),
            "finite",
        ),
        (lambda: ch.mixed_frequencies(8, float("inf")), "angle must be"),
        (lambda: ch.mixed_frequencies(8, [0.1, 0.2]), "angle must be"),
        (
            lambda: ch.score_map(np.ones(8), np.ones(8), ch.axial_frequencies(8), 0),
            "radius",
        ),
        (
            lambda: ch.offset_spread(np.zeros((3, 4)), ch.grid_positions(2, 2)),
            "scores must be",
        ),
        (lambda: ch.grid_shift_error(np.zeros((12, 4)), 3, 3, (1, 0)), "codes must be"),
        (lambda: ch.grid_shift_error(np.zeros((100, 4)), 10, 10, (0, 0)), "not both 0"),
        (
            lambda: ch.grid_shift_error(np.zeros((100, 4)), 10, 10, (-1, 1)),
            "non-negative",
        ),
        (
            lambda: ch.grid_shift_error(
                np.random.default_rng(0).normal(size=(9, 8)), 3, 3, (1, 1)
            ),
            "too small",
        ),
    ],
)
def test_more_bad_input_raises(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_good_input_at_the_edges_passes():
    omegas = ch.axial_frequencies(8)
    assert ch.multi_axis_rope(np.ones((2, 8)), np.zeros((2, 2)), omegas).shape == (2, 8)
    assert ch.multi_axis_rope_matrix(np.array([3.0, 4.0]), omegas).shape == (8, 8)
    assert ch.score_map(np.ones(8), np.ones(8), omegas, 1).shape == (3, 3)
    assert ch.mixed_frequencies(8, 0.0).shape == (4, 2)


def test_mixed_frequencies_by_hand():
    theta = 10.0 ** (-4 * np.arange(2) / 8)  # default base 10, d = 8: 1 and 10**-0.5
    first = np.stack([theta * np.cos(0.3), theta * np.sin(0.3)], 1)
    second = np.stack([-theta * np.sin(0.3), theta * np.cos(0.3)], 1)  # turned by +pi/2
    # float64: cos(0.3 + pi/2) against -sin(0.3) differs by the rounding of the sum and
    # of the two functions (each a few 1e-16); a wrong direction is off by O(1)
    np.testing.assert_allclose(
        ch.mixed_frequencies(8, 0.3), np.vstack([first, second]), atol=1e-14, rtol=0
    )
    np.testing.assert_allclose(
        ch.axial_frequencies(8),  # default base 100
        [[1, 0], [0.1, 0], [0, 1], [0, 0.1]],
        atol=1e-15,
        rtol=0,
    )


@pytest.mark.parametrize(
    "x",
    [
        torch.zeros(2, 4, 16),
        torch.zeros(1, 1, 4, 16, dtype=torch.long),
        np.zeros((1, 1, 4, 16)),
    ],
)
def test_apply_mrope_rejects_what_is_not_a_floating_4d_tensor(x):
    with pytest.raises(ValueError, match="x must be a floating tensor"):
        ch.apply_mrope(x, torch.zeros(3, 1, 4, dtype=torch.long), [2, 3, 3])


def test_tiny_qwen2vl_default_merge_is_two():
    assert ch.tiny_qwen2vl().config.vision_config.spatial_merge_size == 2


def shift_error_by_cells(codes, height, width, dx, dy):
    """Independent reference: cells listed by (x, y), an affine least-squares fit."""
    cell = {(x, y): codes[y * width + x] for y in range(height) for x in range(width)}
    pairs = [
        (cell[x, y], cell[x + dx, y + dy])
        for y in range(height - dy)
        for x in range(width - dx)
    ]
    source = np.array([np.append(s, 1.0) for s, _ in pairs])
    target = np.array([t for _, t in pairs])
    fit = np.linalg.lstsq(source, target, rcond=None)[0]
    return np.linalg.norm(source @ fit - target) / np.linalg.norm(
        target - target.mean(0)
    )


@pytest.mark.parametrize(
    "height, width, delta", [(6, 9, (1, 0)), (9, 6, (0, 2)), (7, 8, (2, 1))]
)
def test_grid_shift_error_on_non_square_grids(height, width, delta):
    xy = ch.grid_positions(height, width)
    codes = ch.rotary_code(xy, ch.axial_frequencies(8))
    assert ch.grid_shift_error(codes, height, width, delta) < 1e-9
    rng = np.random.default_rng(height)
    squashed = np.tanh(codes[:, [0, 1, 4, 5]] * 1.7 + rng.normal(size=4))  # x and y
    got = ch.grid_shift_error(squashed, height, width, delta)
    expected = shift_error_by_cells(squashed, height, width, *delta)
    assert got == pytest.approx(expected, rel=1e-9) and got > 1e-3


@pytest.mark.parametrize("head_dim", [16.0, True, np.float64(16), "16"])
def test_sections_need_an_integer_head_dim(head_dim):
    with pytest.raises(ValueError, match="head_dim must be a positive even integer"):
        ch.mrope_axis_of_pairs([2, 3, 3], head_dim)


def test_tiny_qwen25vl_is_the_promised_model(tiny25):
    vision, text = tiny25.config.vision_config, tiny25.config.text_config
    assert vision.tokens_per_second == 2 and vision.spatial_merge_size == 2
    assert text.num_hidden_layers == 1 and text.hidden_size == 4 * 16
    assert list(text.rope_parameters["mrope_section"]) == [2, 3, 3]
    assert (
        ch.tiny_qwen25vl(tokens_per_second=5).config.vision_config.tokens_per_second
        == 5
    )
    assert not tiny25.training


def test_transformers_inputs_is_a_batch_of_one():
    layout = [("text", 2), ("video", (2, 2, 4)), ("text", 1)]
    one = ch.transformers_inputs(layout)
    batch = ch.transformers_batch([layout])
    assert "attention_mask" not in one and batch["attention_mask"].tolist() == [[1] * 7]
    assert torch.equal(one["input_ids"], batch["input_ids"])
    assert one["input_ids"][0].tolist() == [3, 3, 91, 91, 91, 91, 3]
    assert one["mm_token_type_ids"][0].tolist() == [0, 0, 2, 2, 2, 2, 0]
    padded = ch.transformers_batch([layout, [("text", 3)]])
    assert padded["input_ids"][1].tolist() == [2, 2, 2, 2, 3, 3, 3]  # the pad token
    assert padded["attention_mask"][1].tolist() == [0] * 4 + [1] * 3


def test_rotary_code_error_by_hand():
    u = 2.0**-53
    gamma_2 = 2 * u / (1 - 2 * u)
    omegas = np.array([[1.0, -0.5], [0.25, 0.0]])  # largest |omega_i|_1 = 1.5
    assert ch.rotary_code_error(omegas, 10) == pytest.approx(
        gamma_2 * 10 * 1.5 + 4 * u, rel=1e-12
    )
    three_axes = np.array([[0.0, 1.0, 1.0]])
    gamma_3 = 3 * u / (1 - 3 * u)
    assert ch.rotary_code_error(three_axes, 4) == pytest.approx(
        gamma_3 * 8 + 4 * u, rel=1e-12
    )
    with pytest.raises(ValueError, match="radius"):
        ch.rotary_code_error(omegas, -1)


def test_rotary_code_error_covers_the_codes():
    """rotary_code against cos and sin of angles summed in another order (exact
    integers times the same omegas): within twice the bound."""
    rng = np.random.default_rng(5)
    omegas = rng.uniform(-1.0, 1.0, size=(8, 2))
    xy = rng.integers(-47, 48, size=(200, 2)).astype(np.float64)
    got = ch.rotary_code(xy, omegas)
    angles = xy[:, 1:2] * omegas[:, 1] + xy[:, 0:1] * omegas[:, 0]
    e = ch.rotary_code_error(omegas, 47)
    assert np.abs(got[:, 0::2] - np.cos(angles)).max() <= 2 * e
    assert np.abs(got[:, 1::2] - np.sin(angles)).max() <= 2 * e


def test_offset_grid_by_hand():
    assert ch.offset_grid(1).tolist() == [
        [-1, -1],
        [0, -1],
        [1, -1],
        [-1, 0],
        [0, 0],
        [1, 0],
        [-1, 1],
        [0, 1],
        [1, 1],
    ]
    assert ch.offset_grid(0).tolist() == [[0, 0]]


def test_measure_grid_code_of_a_slow_rotary_code_by_hand():
    """Axial planes of frequency 0.1: trained offsets |dx|, |dy| <= 3 turn them by at
    most 0.3 rad, the test's offsets up to 5 by 0.5 rad: every coordinate leaves its
    range, and the farthest new code (offset (5, 5)) lies a chord 2 sin(0.1) per plane
    outside, of the norm sqrt(2) of every code."""
    omegas = np.array([[0.1, 0.0], [0.0, 0.1]])
    e = ch.rotary_code_error(omegas, 5)
    m = ch.measure_grid_code(
        lambda xy: ch.rotary_code(xy, omegas), 4, 6, 0, entry_error=e, rotary=True
    )
    cos_out = (np.cos(0.3) - np.cos(0.5)) / (1 - np.cos(0.3))
    sin_out = (np.sin(0.5) - np.sin(0.3)) / (2 * np.sin(0.3))
    assert m["on_offsets"] and m["has_code"] and m["width"] == 4
    assert m["coordinates_out"] == 4
    assert m["excursion"] == pytest.approx(max(cos_out, sin_out), rel=1e-9)
    assert m["outside"] == pytest.approx(2 * np.sin(0.1), rel=1e-9)
    assert m["gap_ok"] and m["distinct"] and m["drift"] <= m["drift_bound"] == 2 * e
    assert m["logit_spread"] <= m["logit_bound"] < 1e-10
    assert ch.score(m) == {
        "D1": True,
        "D2": True,
        "D3": False,
        "D4": True,
        "D5": True,
        "logits": True,
    }
    # planes turning a quarter turn per step meet only cos, sin in {-1, 0, 1}, all
    # seen on offsets up to 3: nothing leaves its range (up to rounding, 1e-15)
    quarter = np.pi / 2 * np.eye(2)
    fast = ch.measure_grid_code(
        lambda xy: ch.rotary_code(xy, quarter),
        4,
        6,
        0,
        entry_error=ch.rotary_code_error(quarter, 5),
        rotary=True,
    )
    assert fast["coordinates_out"] == 0 and fast["excursion"] < 1e-12


def test_measure_grid_code_of_the_position_itself_by_hand():
    """The code (x, y): trained range [0, 2] per coordinate, new cells up to 4."""
    m = ch.measure_grid_code(
        lambda xy: xy.copy(), 3, 5, 7, entry_error=0.0, rotary=False
    )
    assert not m["on_offsets"] and m["coordinates_out"] == 2
    assert m["excursion"] == 1.0  # (4 - 2) / 2
    assert m["outside"] == pytest.approx(1.0)  # |(4, 4) - (2, 2)| / |(2, 2)|
    assert m["gap_ok"] and m["drift"] == 0.0 and m["parameters"] == 7
    assert m["shift"] < 1e-12 and m["grid_shift"] < 1e-12  # an exact translation
    assert m["logit_spread"] > 1e6 * m["logit_bound"]  # W_Q p_m . W_K p_n: absolute
    assert ch.score(m) == {
        "D1": True,
        "D2": True,
        "D3": False,
        "D4": False,
        "D5": False,
        "logits": False,
    }
    with pytest.raises(ValueError, match="larger than the training grid"):
        ch.measure_grid_code(lambda xy: xy, 5, 5, 0, entry_error=0.0, rotary=False)


@pytest.mark.parametrize("shift", [(1, 0), (0, 1), (1, 1)])
def test_grid_shift_error_is_chapter2s_test_on_separable_codes(shift):
    """A code made of one axis code per half: the whole-grid fit of grid_shift_error is
    Chapter 2's axis_grid_shift_error (rows first there, (dx, dy) here)."""
    rng = np.random.default_rng(sum(shift))
    axis_code = np.tanh(ch.sincos_1d(np.arange(9), 6) * 2 + rng.normal(size=6))
    rows, cols = np.divmod(np.arange(81), 9)
    grid_code = np.hstack([axis_code[rows], axis_code[cols]])
    dy, dx = shift
    ours = ch.grid_shift_error(grid_code, 9, 9, (dx, dy))
    theirs = ch.axis_grid_shift_error(axis_code, (dy, dx))
    # float64 least squares of one problem with rows in another order: ~1e-14 relative
    assert ours == pytest.approx(theirs, rel=1e-9) and ours > 1e-3


@pytest.mark.parametrize(
    "name, forbidden",
    [
        ("check_axial_rope", ("_axial_reference",)),
    ],
)
def test_checks_hold_expected_values(name, forbidden) -> None:
    """The student edition shows each check's source: it must not compute the
    answer."""
    assert_holds_values("10_positions_in_2d", name, forbidden)
