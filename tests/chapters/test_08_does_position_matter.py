"""Chapter 8's experiment code, taken from the notebook: the six position modules (RoPE
against Chapter 6's functions, ALiBi's slopes against the paper's rule, NoPE adding
nothing), the tasks, a tiny training run that must beat chance, and the configuration
errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from bookkit.testing import assert_holds_values, fails, load_chapter, passes

ch = load_chapter("08_does_position_matter")
ch06 = load_chapter("06_rope_in_code")
ch04 = load_chapter("04_sinusoidal_in_code")


class RecordingAdamW(torch.optim.AdamW):
    """AdamW that records the learning rate and weight decay of every step."""

    seen: list[tuple[float, float]] = []

    def step(self, closure=None):
        group = self.param_groups[0]
        RecordingAdamW.seen.append((group["lr"], group["weight_decay"]))
        return super().step(closure)


SEEDS = st.integers(0, 2**31 - 1)


def paper_slopes(n: int) -> list[float]:
    """ALiBi's slopes as the authors' code computes them (start * ratio**i,
    recursion)."""

    def power_of_2(n: int) -> list[float]:
        start = 2 ** (-(2 ** -(math.log2(n) - 3)))
        return [start * start**i for i in range(n)]

    if math.log2(n).is_integer():
        return power_of_2(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_2(closest) + paper_slopes(2 * closest)[0::2][: n - closest]


def random_qk(seed: int, batch: int, heads: int, tokens: int, head_dim: int):
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(batch, heads, tokens, head_dim, generator=generator)
    k = torch.randn(batch, heads, tokens, head_dim, generator=generator)
    positions = torch.randint(0, 500, (batch, tokens), generator=generator)
    return q, k, positions


# --- RoPE and its partial variants ---------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    seed=SEEDS,
    shape=st.tuples(
        st.integers(1, 3),
        st.integers(1, 4),
        st.integers(1, 9),
        st.integers(1, 32).map(lambda h: 2 * h),
    ),
)
def test_rope_module_equals_chapter_6(seed, shape) -> None:
    q, k, positions = random_qk(seed, *shape)
    rope = ch.RoPE(shape[-1])
    q_rot, k_rot = rope.rotate(q, k, positions)
    torch.testing.assert_close(
        q_rot, ch06.apply_rope_halves(q, positions), atol=1e-6, rtol=0
    )
    torch.testing.assert_close(
        k_rot, ch06.apply_rope_halves(k, positions), atol=1e-6, rtol=0
    )
    # positions shared by the batch, shape (T,)
    shared = positions[0]
    q_shared, _ = rope.rotate(q, k, shared)
    torch.testing.assert_close(
        q_shared, ch06.apply_rope_halves(q, shared[None]), atol=1e-6, rtol=0
    )


@settings(max_examples=30, deadline=None)
@given(
    seed=SEEDS,
    head_dim=st.integers(2, 32).map(lambda h: 2 * h),
    fraction=st.floats(0.05, 1.0),
)
def test_p_rope_rotates_the_highest_frequencies_only(seed, head_dim, fraction) -> None:
    half = head_dim // 2
    kept = round(fraction * half)
    if kept < 1:
        with pytest.raises(ValueError, match="rotates no pair"):
            ch.rotary_inv_freq(head_dim, fraction=fraction)
        return
    inv_freq = ch.rotary_inv_freq(head_dim, fraction=fraction)
    theta = torch.tensor(ch06.frequencies(head_dim), dtype=torch.float32)
    torch.testing.assert_close(inv_freq[:kept], theta[:kept], atol=0, rtol=1e-6)
    assert torch.all(inv_freq[kept:] == 0)
    q, k, positions = random_qk(seed, 2, 3, 5, head_dim)
    q_rot, _ = ch.RoPE(head_dim, inv_freq=inv_freq).rotate(q, k, positions)
    full = ch06.apply_rope_halves(q, positions)
    rotated = torch.cat((torch.arange(kept), torch.arange(kept) + half))
    still = torch.cat((torch.arange(kept, half), torch.arange(kept, half) + half))
    torch.testing.assert_close(
        q_rot[..., rotated], full[..., rotated], atol=1e-6, rtol=0
    )
    torch.testing.assert_close(q_rot[..., still], q[..., still], atol=0, rtol=0)


@settings(max_examples=30, deadline=None)
@given(
    seed=SEEDS,
    head_dim=st.sampled_from([8, 16, 32, 64]),
    pct=st.sampled_from([0.25, 0.5, 0.75, 1.0]),
)
def test_neox_partial_equals_chapter_6_up_to_a_permutation(seed, head_dim, pct) -> None:
    """GPT-NeoX rotates coordinates (j, j + r/2) of the first r; our module pairs
    (j, j + head_dim/2). Reordering the coordinates maps one onto the other."""
    r = int(head_dim * pct)
    half = head_dim // 2
    q, k, positions = random_qk(seed, 2, 2, 6, head_dim)
    ours, _ = ch.RoPE(
        head_dim, inv_freq=ch.rotary_inv_freq(head_dim, fraction=pct, keep="neox")
    ).rotate(q, k, positions)
    order = torch.cat((torch.arange(r // 2), half + torch.arange(r // 2)))
    rest = torch.tensor(
        [i for i in range(head_dim) if i not in set(order.tolist())], dtype=torch.long
    )
    perm = torch.cat((order, rest))  # neox coordinate c is our coordinate perm[c]
    neox = ch06.apply_rope_partial(q[..., perm], positions, 10000.0, pct)
    torch.testing.assert_close(ours[..., perm], neox, atol=1e-6, rtol=0)


def test_rotary_inv_freq_layouts_by_hand() -> None:
    # head_dim 16, a quarter of the pairs: p-RoPE keeps theta_0, theta_1 =
    # 10000**(-1/8); NeoX rotates 4 coordinates with frequencies 1 and 10000**(-1/2) =
    # 0.01.
    p = ch.rotary_inv_freq(16, fraction=0.25)
    neox = ch.rotary_inv_freq(16, fraction=0.25, keep="neox")
    assert p[:2].tolist() == pytest.approx([1.0, 10000 ** (-1 / 8)], rel=1e-6)
    assert neox[:2].tolist() == pytest.approx([1.0, 0.01], rel=1e-6)
    assert p[2:].abs().sum() == 0 and neox[2:].abs().sum() == 0
    assert torch.equal(
        ch.rotary_inv_freq(16), ch.rotary_inv_freq(16, fraction=1.0, keep="neox")
    )


def test_rope_logits_depend_on_offsets_only() -> None:
    q, k, positions = random_qk(3, 1, 2, 7, 16)
    rope = ch.RoPE(16)

    def logits(positions):
        q_rot, k_rot = rope.rotate(q.double(), k.double(), positions)
        return q_rot @ k_rot.transpose(-1, -2)

    torch.testing.assert_close(
        logits(positions), logits(positions + 1234), atol=2e-3, rtol=0
    )


def test_pair_mask_removes_pairs_from_logits() -> None:
    q, k, positions = random_qk(4, 1, 1, 5, 8)
    rope = ch.RoPE(8)
    rope.set_pair_mask([1, 0, 1, 0])
    q_rot, k_rot = rope.rotate(q, k, positions)
    full_q = ch06.apply_rope_halves(q, positions)
    full_k = ch06.apply_rope_halves(k, positions)
    keep = torch.tensor([0, 2, 4, 6])  # pairs 0 and 2: coordinates (0, 4) and (2, 6)
    expected = full_q[..., keep] @ full_k[..., keep].transpose(-1, -2)
    torch.testing.assert_close(
        q_rot @ k_rot.transpose(-1, -2), expected, atol=1e-5, rtol=0
    )
    with pytest.raises(ValueError, match="4 finite numbers"):
        rope.set_pair_mask([1, 0, 1])
    with pytest.raises(ValueError, match="inv_freq must hold 4"):
        rope.set_inv_freq(torch.ones(8))


# --- ALiBi ---------------------------------------------------------------------------


@pytest.mark.parametrize("heads", [8, 6, 1, 2, 3, 5, 12, 16])
def test_alibi_slopes_match_the_papers_rule(heads) -> None:
    assert ch.alibi_slopes(heads).tolist() == pytest.approx(
        paper_slopes(heads), rel=1e-6
    )


def test_alibi_slopes_by_hand() -> None:
    assert ch.alibi_slopes(8).tolist() == [2.0**-k for k in range(1, 9)]
    # H = 6: the four slopes of 4 heads, then 2**-1 and 2**-3 from the eight-head
    # sequence
    assert ch.alibi_slopes(6).tolist() == [
        0.25,
        0.0625,
        0.015625,
        0.00390625,
        0.5,
        0.125,
    ]


def test_alibi_bias_is_minus_slope_times_offset() -> None:
    alibi = ch.ALiBi(2)  # slopes 1/16 and 1/256
    bias = alibi.bias(torch.arange(3))
    assert bias.shape == (2, 3, 3)
    assert bias[0, 2, 0].item() == pytest.approx(-2 / 16)
    assert bias[1, 2, 1].item() == pytest.approx(-1 / 256)
    assert torch.all(bias[:, range(3), range(3)] == 0)
    batched = alibi.bias(torch.tensor([[0, 1, 2], [5, 7, 9]]))
    assert batched.shape == (2, 2, 3, 3)
    assert batched[1, 0, 2, 0].item() == pytest.approx(-4 / 16)


# --- NoPE, learned, sinusoidal
# ---------------------------------------------------------


def test_nope_adds_nothing() -> None:
    nope = ch.NoPE()
    h = torch.randn(2, 5, 8)
    q, k, positions = random_qk(0, 2, 2, 5, 4)
    assert nope.embed(h, positions) is h
    assert nope.rotate(q, k, positions) == (q, k)
    assert nope.bias(positions) is None
    assert not list(nope.parameters()) and not list(nope.buffers())


@pytest.mark.parametrize(
    "scheme,changes",
    [
        ("nope", False),
        ("rope", False),
        ("alibi", False),
        ("p-rope", False),
        ("learned", True),
        ("sinusoidal", True),
    ],
)
def test_shifting_all_positions(scheme, changes) -> None:
    """Relative schemes (and NoPE) ignore a common shift of every position; absolute
    ones do not."""
    torch.manual_seed(0)
    model = ch.TinyTransformer(
        ch.ModelConfig(vocab_size=9, scheme=scheme, max_len=64)
    ).eval()
    tokens = torch.randint(0, 9, (2, 10), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        a = model(tokens)
        b = model(tokens, positions=torch.arange(10) + 40)
    assert (not torch.allclose(a, b, atol=1e-4)) == changes


def test_absolute_tables() -> None:
    learned = ch.LearnedPosition(12, 8)
    sinusoidal = ch.SinusoidalPosition(12, 8)
    h = torch.zeros(3, 5, 8)
    positions = torch.arange(5)
    assert learned.embed(h, positions).shape == (3, 5, 8)
    assert sinusoidal.embed(h, positions).shape == (3, 5, 8)
    np.testing.assert_allclose(
        sinusoidal.embed(h, positions)[0].numpy(),
        ch04.sinusoidal_encoding(5, 8),
        atol=1e-7,
    )
    torch.testing.assert_close(learned.embed(h, positions)[1], learned.table.weight[:5])
    for table in (learned, sinusoidal):
        with pytest.raises(ValueError, match="larger max_len"):
            table.embed(torch.zeros(1, 13, 8), torch.arange(13))


# --- model configuration
# -----------------------------------------------------------------


def test_bad_configurations_raise_clear_errors() -> None:
    with pytest.raises(
        ValueError, match="unknown position scheme 'rotary'.*nope, learned"
    ):
        ch.TinyTransformer(ch.ModelConfig(vocab_size=5, scheme="rotary"))
    for scheme in ("rope", "p-rope"):  # d_model 20, 4 heads: head_dim 5 is odd
        with pytest.raises(
            ValueError, match="head_dim .* must be an even positive integer"
        ):
            ch.TinyTransformer(ch.ModelConfig(vocab_size=5, scheme=scheme, d_model=20))
    with pytest.raises(ValueError, match="multiple of n_heads"):
        ch.TinyTransformer(ch.ModelConfig(vocab_size=5, d_model=30, n_heads=4))
    with pytest.raises(ValueError, match="unknown task 'sort'"):
        ch.make_batch("sort", 2, 10, 4, torch.Generator())
    with pytest.raises(ValueError, match="unknown task"):
        ch.train_model(ch.ModelConfig(vocab_size=5), "sort")
    with pytest.raises(ValueError, match="keep must be"):
        ch.rotary_inv_freq(16, keep="lowest")
    model = ch.TinyTransformer(ch.ModelConfig(vocab_size=5, scheme="nope"))
    with pytest.raises(ValueError, match="integer tensor"):
        model(torch.zeros(2, 3))
    with pytest.raises(ValueError, match="one entry per token"):
        model(torch.zeros(2, 3, dtype=torch.long), positions=torch.arange(4))


def test_rope_rejects_an_odd_head_dim() -> None:
    with pytest.raises(ValueError, match="must be an even positive integer, got 7"):
        ch.RoPE(7)


# --- tasks, evaluation, training
# ---------------------------------------------------------


def test_tasks_by_hand() -> None:
    generator = torch.Generator().manual_seed(0)
    for task in ch.TASKS:
        tokens, targets = ch.make_batch(task, 4, 12, 6, generator)
        assert tokens.shape == targets.shape == (4, 12)
        assert torch.all(tokens[:, 0] == 6) and tokens[:, 1:].max() < 6
        for row in range(4):
            t, y = tokens[row].tolist(), targets[row].tolist()
            for m in range(12):
                if task == "copy":
                    want = t[m - 3] if m >= 4 else -100
                elif task == "index":
                    want = t[4] if m >= 5 else -100
                else:
                    want = max(t[1 : m + 1]) if m >= 1 else -100
                assert y[m] == want, (task, row, m)


def test_attention_by_offset_on_uniform_causal_weights() -> None:
    T = 4
    weights = torch.tril(torch.ones(T, T)) / torch.arange(1, T + 1)[:, None]
    profile = ch.attention_by_offset(weights.expand(2, 3, T, T))
    # offset 0: queries 0..3 weigh themselves 1, 1/2, 1/3, 1/4; offset 3: only query 3
    assert profile[0, 0].item() == pytest.approx((1 + 1 / 2 + 1 / 3 + 1 / 4) / 4)
    assert profile[2, 3].item() == pytest.approx(1 / 4)
    with pytest.raises(ValueError, match=r"\(B, H, T, T\)"):
        ch.attention_by_offset(torch.ones(2, 3, 4))


def test_show_progress_rule(monkeypatch) -> None:
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    monkeypatch.delenv("BOOK_PROGRESS", raising=False)
    assert ch.show_progress() is False
    monkeypatch.setenv("JPY_SESSION_NAME", "x.ipynb")
    assert ch.show_progress() is True
    monkeypatch.setenv("BOOK_PROGRESS", "0")
    assert ch.show_progress() is False
    monkeypatch.setenv("BOOK_PROGRESS", "1")
    monkeypatch.delenv("JPY_SESSION_NAME")
    assert ch.show_progress() is True


def test_tiny_training_beats_chance_and_is_deterministic() -> None:
    torch.set_num_threads(1)
    config = ch.ModelConfig(vocab_size=9, scheme="rope", d_model=32, n_layers=1)
    train = ch.TrainConfig(steps=60, length=12, batch_size=32, lr=1e-2, warmup=6)
    model = ch.train_model(config, "max", train, seed=0, progress=False)
    accuracy = ch.accuracy_by_position(model, "max", 12, n_sequences=256)
    assert np.isnan(accuracy[0])
    tokens, targets = ch.make_batch(
        "max", 256, 12, 8, torch.Generator().manual_seed(10_000)
    )
    baseline = (
        np.bincount(targets[targets >= 0].numpy()).max() / (targets >= 0).sum().item()
    )
    assert np.nanmean(accuracy) > baseline + 0.3  # chance: the most frequent answer
    again = ch.train_model(config, "max", train, seed=0, progress=False)
    for a, b in zip(model.parameters(), again.parameters(), strict=True):
        assert torch.equal(a, b)


def test_custom_batch_function_and_positions() -> None:
    def batches(generator, batch_size, length):
        tokens = torch.randint(0, 4, (batch_size, length), generator=generator)
        return tokens, tokens.roll(-1, dims=1).masked_fill(
            torch.arange(length) == length - 1, ch.IGNORE
        )

    model = ch.train_model(
        ch.ModelConfig(vocab_size=4, scheme="alibi", n_layers=1),
        batches,
        ch.TrainConfig(steps=3, length=8, batch_size=4, warmup=1),
    )
    tokens, targets = batches(torch.Generator().manual_seed(0), 3, 8)
    result = ch.evaluate_by_position(model, tokens, targets)
    assert result["accuracy"].shape == result["loss"].shape == (8,)
    assert np.isnan(result["loss"][-1]) and np.all(np.isfinite(result["loss"][:-1]))
    logits, weights = model(tokens, return_attention=True)
    assert logits.shape == (3, 8, 4) and weights[0].shape == (3, 4, 8, 8)
    torch.testing.assert_close(weights[0].sum(-1), torch.ones(3, 4, 8))
    assert torch.all(weights[0].triu(1) == 0)


def test_evaluation_in_chunks_matches_one_forward_pass() -> None:
    """150 sequences: chunks of 64, 64 and 22. The accuracy and the loss at each
    position are those of one forward pass over all of them, counted by hand here; a
    row of positions reaches every chunk."""
    assert ch.EVAL_CHUNK == 64
    torch.manual_seed(3)
    model = ch.TinyTransformer(ch.ModelConfig(vocab_size=6, scheme="learned")).eval()
    generator = torch.Generator().manual_seed(4)
    tokens = torch.randint(0, 6, (150, 12), generator=generator)
    targets = torch.randint(0, 6, (150, 12), generator=generator)
    targets[:, :3] = ch.IGNORE
    targets[::2, 5] = ch.IGNORE  # position 5: only half the sequences count
    for positions in (None, torch.arange(40, 52)):
        with torch.no_grad():
            logits = model(tokens, positions=positions)
        result = ch.evaluate_by_position(model, tokens, targets, positions)
        for m in range(12):
            rows = targets[:, m] != ch.IGNORE
            if not rows.any():
                assert np.isnan(result["accuracy"][m]) and np.isnan(result["loss"][m])
                continue
            hits = (logits[rows, m].argmax(-1) == targets[rows, m]).double().mean()
            loss = torch.nn.functional.cross_entropy(
                logits[rows, m].double(), targets[rows, m]
            )
            # The chunks' logits may differ from these by float32 rounding: a few ulps
            # of |logit| < 10, under 1e-5. That moves a loss by at most 2e-5, and an
            # argmax only where the top two logits are closer than 2e-5.
            top2 = logits[rows, m].topk(2).values
            near_ties = int((top2[:, 0] - top2[:, 1] < 2e-5).sum())
            assert abs(result["accuracy"][m] - hits.item()) <= near_ties / rows.sum()
            assert result["loss"][m] == pytest.approx(loss.item(), abs=2e-5)
        assert logits.abs().max() < 10
    with pytest.raises(ValueError, match=r"one row \(T,\)"):
        ch.evaluate_by_position(model, tokens, targets, torch.arange(12)[None])


# --- exercise checks: the right answer passes, each typical mistake is named
# ------------


def good_alibi_bias(slopes, num_positions):
    if not isinstance(num_positions, int) or num_positions < 1:
        raise ValueError(
            f"num_positions must be a positive integer, got {num_positions!r}"
        )
    m = torch.arange(num_positions)
    offsets = (m[:, None] - m[None, :]).float()
    bias = -torch.as_tensor(slopes).float()[:, None, None] * offsets
    return bias.masked_fill(offsets < 0, float("-inf"))


def test_check_alibi_bias_matrix(capsys) -> None:
    passes(ch.check_alibi_bias_matrix, good_alibi_bias, 9, capsys)

    def flipped(slopes, T):
        bias = good_alibi_bias(slopes, T)
        return torch.where(torch.isinf(bias), bias, -bias)

    def unmasked(slopes, T):
        good_alibi_bias(slopes, T)
        m = torch.arange(T)
        return (
            -torch.as_tensor(slopes)[:, None, None] * (m[:, None] - m[None, :]).float()
        )

    def off_by_one(slopes, T):
        return good_alibi_bias(slopes, T) - torch.as_tensor(slopes)[:, None, None]

    def no_validation(slopes, T):
        return good_alibi_bias(slopes, max(T, 1))

    def vague_error(slopes, T):
        if T < 1:
            raise ValueError("bad input")
        return good_alibi_bias(slopes, T)

    def float64(slopes, T):  # float64 and a loop: also right
        out = torch.full((len(slopes), T, T), float("-inf"), dtype=torch.float64)
        for h, s in enumerate(slopes.tolist()):
            for m in range(T):
                for n in range(m + 1):
                    out[h, m, n] = -s * (m - n)
        if T < 1:
            raise ValueError("num_positions must be positive")
        return out

    passes(ch.check_alibi_bias_matrix, float64, 9, capsys)
    fails(ch.check_alibi_bias_matrix, flipped, "Exercise 8.3", "sign is flipped")
    fails(ch.check_alibi_bias_matrix, unmasked, "causal mask is missing")
    fails(ch.check_alibi_bias_matrix, off_by_one, "off-by-one")
    fails(ch.check_alibi_bias_matrix, no_validation, "a ValueError", "no error")
    fails(ch.check_alibi_bias_matrix, vague_error, "your own ValueError mentioning")
    fails(
        ch.check_alibi_bias_matrix,
        lambda s, T: good_alibi_bias(s, T)[:, :2],
        "case two heads",
        "shape (2, 3, 3)",
    )

    def stub(slopes, T):
        raise NotImplementedError("Exercise 8.3")

    with pytest.raises(NotImplementedError):
        ch.check_alibi_bias_matrix(stub)


def good_distance(weights):
    if weights.ndim != 4:
        raise ValueError("weights must have shape (B, H, T, T)")
    T = weights.shape[-1]
    m = torch.arange(T, dtype=torch.float64)
    return (
        (weights.double() * (m[:, None] - m[None, :])).sum(-1).mean(dim=(0, 2)).numpy()
    )


def test_check_mean_attention_distance(capsys) -> None:
    passes(ch.check_mean_attention_distance, good_distance, 5, capsys)
    # hand-computed: uniform causal weights over T = 5 give (0 + 0.5 + 1 + 1.5 + 2) / 5
    # = 1
    uniform = torch.tril(torch.ones(5, 5)) / torch.arange(1, 6)[:, None]
    assert good_distance(uniform[None, None]).tolist() == pytest.approx([1.0])

    def float32(w):  # float32 throughout, einsum: also right
        if w.ndim != 4:
            raise ValueError("weights must have shape (B, H, T, T)")
        m = torch.arange(w.shape[-1], dtype=w.dtype)
        return torch.einsum("bhmn,mn->bhm", w, m[:, None] - m[None, :]).mean((0, 2))

    passes(ch.check_mean_attention_distance, float32, 5, capsys)
    wrong_answers = [
        (lambda w: -good_distance(w), "sign is flipped"),
        (lambda w: good_distance(w) / w.shape[-1], "averaged over all T x T"),
        (
            lambda w: good_distance(w)[None] if w.ndim == 4 else None,
            "batch axis was kept",
        ),
        (lambda w: good_distance(w) if w.ndim == 4 else np.zeros(1), "a ValueError"),
    ]
    for wrong, message in wrong_answers:
        fails(ch.check_mean_attention_distance, wrong, "Exercise 8.4", message)


@pytest.mark.parametrize(
    "name, forbidden",
    [
        # 8.3 and 8.4 hold sample values; no bias matrix or distance of their own
        (
            "check_alibi_bias_matrix",
            (
                "_reference",
                "subtract.outer",
                "masked_fill",
                "tril(",
                "np.where",
                "alibi_slopes(",
            ),
        ),
        ("check_mean_attention_distance", ("_reference", "subtract.outer", ".sum(")),
    ],
)
def test_checks_hold_expected_values(name, forbidden) -> None:
    """The student edition shows each check's source: it must not compute the
    answer."""
    assert_holds_values("08_does_position_matter", name, forbidden)


# --- the training schedule and the defaults the prose quotes
# ------------------------------


def test_lr_multiplier_by_hand() -> None:
    # warm-up over 4 steps: 1/4, 2/4, 3/4, 1; then a cosine over the 8 remaining steps
    assert [ch.lr_multiplier(s, 4, 12) for s in range(4)] == [0.25, 0.5, 0.75, 1.0]
    assert ch.lr_multiplier(4, 4, 12) == 1.0
    assert ch.lr_multiplier(6, 4, 12) == pytest.approx((1 + math.sqrt(0.5)) / 2)
    assert ch.lr_multiplier(8, 4, 12) == pytest.approx(0.5)
    assert ch.lr_multiplier(12, 4, 12) == pytest.approx(0.0, abs=1e-15)
    # one step of decay: the cosine reaches 0 at once; no decay at all: stays 1
    assert ch.lr_multiplier(4, 3, 4) == pytest.approx(0.0, abs=1e-15)
    assert ch.lr_multiplier(3, 3, 3) == 1.0


def test_training_warms_up_then_decays_the_learning_rate(monkeypatch) -> None:
    monkeypatch.setattr(torch.optim, "AdamW", RecordingAdamW)
    RecordingAdamW.seen = []
    train = ch.TrainConfig(steps=6, length=8, batch_size=2, lr=0.02, warmup=2)
    config = ch.ModelConfig(vocab_size=5, d_model=16, n_heads=2, n_layers=1)
    ch.train_model(config, "copy", train, progress=False)
    # warm-up 1/2, 1; then (1 + cos(pi k / 4)) / 2 for k = 0..3, all times lr = 0.02
    factors = [0.5, 1.0] + [(1 + math.cos(math.pi * k / 4)) / 2 for k in range(4)]
    assert [lr for lr, _ in RecordingAdamW.seen] == pytest.approx(
        [0.02 * f for f in factors], rel=1e-12
    )
    assert {decay for _, decay in RecordingAdamW.seen} == {0.01}  # the default


def test_train_config_defaults_are_the_ones_the_prose_quotes() -> None:
    # "400 steps of 32 sequences of length L = 16, learning rate 1e-2, a short warm-up"
    assert ch.TrainConfig() == ch.TrainConfig(
        steps=400, length=16, batch_size=32, lr=1e-2, weight_decay=0.01, warmup=30
    )


def test_accuracy_by_position_defaults_to_512_fresh_sequences_of_seed_10000() -> None:
    torch.manual_seed(0)
    model = ch.TinyTransformer(
        ch.ModelConfig(vocab_size=7, d_model=16, n_heads=2, n_layers=1)
    ).eval()
    tokens, targets = ch.make_batch(
        "copy", 512, 10, 6, torch.Generator().manual_seed(10_000)
    )
    logits = model(tokens)
    valid = targets != -100
    correct = ((logits.argmax(-1) == targets) & valid).sum(0) / valid.sum(0)
    accuracy = ch.accuracy_by_position(model, "copy", 10)
    assert np.array_equal(np.isnan(accuracy), (valid.sum(0) == 0).numpy())
    np.testing.assert_allclose(accuracy[4:], correct[4:].numpy(), rtol=0, atol=1e-12)


def test_model_config_defaults_build_the_chapters_model() -> None:
    """Defaults exercised: d_model 64, 4 heads of 16, 2 layers, tables of 64 rows,
    base 10 000, p-RoPE rotating a quarter of the 8 pairs (hand-computed references)."""
    model = ch.TinyTransformer(ch.ModelConfig(vocab_size=9))
    assert model.config.scheme == "rope" and len(model.blocks) == 2
    assert model.embed.weight.shape == (9, 64)
    attention = model.blocks[0].attn
    assert (attention.n_heads, attention.head_dim) == (4, 16)
    theta = 10000.0 ** (-torch.arange(0, 16, 2, dtype=torch.float64) / 16)
    torch.testing.assert_close(
        model.position.inv_freq.double(), theta, rtol=1e-6, atol=0
    )
    p_rope = ch.TinyTransformer(ch.ModelConfig(vocab_size=9, scheme="p-rope")).position
    torch.testing.assert_close(
        p_rope.inv_freq[:2].double(), theta[:2], rtol=1e-6, atol=0
    )
    assert not p_rope.inv_freq[2:].any()
    learned = ch.TinyTransformer(
        ch.ModelConfig(vocab_size=9, scheme="learned")
    ).position
    assert learned.table.weight.shape == (64, 64)
    sinusoidal = ch.TinyTransformer(ch.ModelConfig(vocab_size=9, scheme="sinusoidal"))
    np.testing.assert_allclose(
        sinusoidal.position.pe.numpy(),
        ch04.sinusoidal_encoding(64, 64),
        atol=1e-7,
        rtol=0,
    )
    assert ch.TinyTransformer(
        ch.ModelConfig(vocab_size=9, scheme="alibi")
    ).position.slopes.tolist() == pytest.approx([2.0 ** (-2 * h) for h in range(1, 5)])


def test_tables_accept_their_last_row_and_reject_the_next() -> None:
    # max_len 12 > d_model 8, and max_len 4 < d_model 8: the bound is the row count
    for max_len, d_model in ((12, 8), (4, 8)):
        for table in (
            ch.LearnedPosition(max_len, d_model),
            ch.SinusoidalPosition(max_len, d_model),
        ):
            h = torch.zeros(1, max_len, d_model)
            assert table.embed(h, torch.arange(max_len)).shape == (1, max_len, d_model)
            with pytest.raises(ValueError, match="larger max_len"):
                table.embed(h[:, :1], torch.tensor([max_len]))


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(base=0.0), "base must be a finite positive"),
        (dict(base=-10.0), "base must be a finite positive"),
        (dict(base=float("inf")), "base must be a finite positive"),
        (dict(fraction=0.0), "fraction must lie in"),
        (dict(fraction=-0.5), "fraction must lie in"),
        (dict(fraction=1.5), "fraction must lie in"),
        (dict(fraction=1.5, keep="neox"), "fraction must lie in"),
    ],
)
def test_rotary_inv_freq_rejects_bad_base_and_fraction(kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        ch.rotary_inv_freq(16, **kwargs)


def test_make_batch_limits_are_exact() -> None:
    # the shortest sequence with an index answer is INDEX + 2 = 6 tokens; 2 symbols,
    # 1 sequence are the smallest allowed
    tokens, targets = ch.make_batch("index", 1, 6, 2, torch.Generator().manual_seed(0))
    assert tokens.shape == (1, 6) and targets[0, 5] == tokens[0, 4]
    for task in ch.TASKS:
        assert ch.make_batch(task, 1, 6, 2, torch.Generator())[0].shape == (1, 6)
    for bad in (dict(length=5), dict(n_symbols=1), dict(batch_size=0)):
        args = dict(batch_size=1, length=6, n_symbols=2) | bad
        with pytest.raises(ValueError, match="need length >= 6"):
            ch.make_batch("copy", generator=torch.Generator(), **args)


def test_check_positions_cases() -> None:
    ch.check_positions(torch.arange(5), 5)
    ch.check_positions(torch.arange(10).view(2, 5), 5)  # (B, T) with B != T
    ch.check_positions(torch.zeros(0, dtype=torch.long), 0)
    with pytest.raises(ValueError, match=">= 0"):
        ch.check_positions(torch.tensor([0, -1, 2]), 3)
    with pytest.raises(ValueError, match="one entry per token"):
        ch.check_positions(torch.arange(10).view(5, 2), 5)  # (T, B): the wrong axis
    with pytest.raises(ValueError, match="integers"):
        ch.check_positions(torch.arange(3.0), 3)
    model = ch.TinyTransformer(ch.ModelConfig(vocab_size=5, scheme="rope", n_layers=1))
    tokens = torch.zeros(2, 5, dtype=torch.long)
    assert model(tokens, positions=torch.arange(10).view(2, 5)).shape == (2, 5, 5)


def test_learned_table_has_max_len_rows_of_d_model() -> None:
    config = ch.ModelConfig(vocab_size=5, scheme="learned", d_model=32, max_len=20)
    model = ch.TinyTransformer(config)
    assert model.position.table.weight.shape == (20, 32)
    assert model(torch.zeros(1, 20, dtype=torch.long)).shape == (1, 20, 5)


def test_block_is_pre_norm_attention_then_mlp_by_hand() -> None:
    """Block.forward against the formulas, written here with the block's own weights:
    h + softmax(q k^T / sqrt(head_dim), causal) v W_o, then h + W2 GELU(W1 LN(h))."""
    torch.manual_seed(0)
    block = ch.Block(16, 2).double()
    h = torch.randn(3, 6, 16, dtype=torch.float64)
    positions = torch.arange(6)
    out, weights = block(h, positions, ch.NoPE())
    x = block.ln_attn(h)
    q, k, v = (x @ block.attn.qkv.weight.T + block.attn.qkv.bias).split(16, dim=-1)
    heads = lambda t: t.view(3, 6, 2, 8).transpose(1, 2)  # noqa: E731
    q, k, v = heads(q), heads(k), heads(v)
    logits = q @ k.transpose(-1, -2) / math.sqrt(8)
    logits = logits.masked_fill(torch.ones(6, 6).triu(1).bool(), float("-inf"))
    attn = logits.softmax(-1)
    mixed = (attn @ v).transpose(1, 2).reshape(3, 6, 16)
    h1 = h + block.attn.out(mixed)
    first, second = block.mlp[0], block.mlp[2]
    expected = h1 + second(torch.nn.functional.gelu(first(block.ln_mlp(h1))))
    torch.testing.assert_close(weights, attn, atol=1e-12, rtol=0)
    torch.testing.assert_close(out, expected, atol=1e-12, rtol=0)
    assert first.out_features == 64 and second.in_features == 64  # hidden width 4 d


@pytest.mark.parametrize("bad", [0, -2, 2.0, True, "4"])
def test_alibi_slopes_rejects_a_bad_head_count(bad) -> None:
    with pytest.raises(ValueError, match="n_heads must be a positive integer"):
        ch.alibi_slopes(bad)


def test_max_task_uses_every_symbol() -> None:
    tokens, targets = ch.make_batch("max", 400, 12, 6, torch.Generator().manual_seed(2))
    assert set(tokens[:, 1:].unique().tolist()) == set(range(6))
    assert set(targets[:, 1:].unique().tolist()) == set(range(6))


def test_one_head_is_a_valid_model() -> None:
    model = ch.TinyTransformer(
        ch.ModelConfig(vocab_size=5, d_model=16, n_heads=1, n_layers=1)
    )
    assert model.blocks[0].attn.head_dim == 16
    with pytest.raises(ValueError, match="multiple of n_heads"):
        ch.TinyTransformer(ch.ModelConfig(vocab_size=5, d_model=16, n_heads=0))


def test_train_model_default_seed_is_zero() -> None:
    config = ch.ModelConfig(vocab_size=5, d_model=16, n_heads=2, n_layers=1)
    train = ch.TrainConfig(steps=2, length=8, batch_size=2, warmup=1)
    default = ch.train_model(config, "copy", train, progress=False)
    for seed, same in ((0, True), (1, False)):
        other = ch.train_model(config, "copy", train, seed=seed, progress=False)
        equal = all(
            torch.equal(a, b)
            for a, b in zip(default.parameters(), other.parameters(), strict=True)
        )
        assert equal == same


@pytest.mark.parametrize(
    "positions", [[0, 1, 2], torch.zeros(1, 1, 3, dtype=torch.long), torch.tensor(0)]
)
def test_check_positions_rejects_what_is_not_a_1d_or_2d_tensor(positions) -> None:
    with pytest.raises(ValueError, match=r"shape \(T,\) or \(B, T\)"):
        ch.check_positions(positions, 3)


@pytest.mark.parametrize(
    "positions",
    [
        torch.arange(4),
        torch.arange(6),
        torch.zeros(3, 5, dtype=torch.long),
        torch.zeros(2, 1, dtype=torch.long),
    ],
)
def test_rope_rotate_rejects_positions_that_do_not_fit_t(positions) -> None:
    """q and k hold T = 5 tokens for a batch of 2: positions of another length (or a
    batch of 3) must give a ValueError naming the shapes, not a broadcasting error."""
    q, k, _ = random_qk(0, 2, 3, 5, 8)
    with pytest.raises(ValueError, match=r"one position per token.*\(5,\), \(2, 5\)"):
        ch.RoPE(8).rotate(q, k, positions)


def test_rope_rotate_rejects_mismatched_q_and_k() -> None:
    q, k, positions = random_qk(0, 2, 3, 5, 8)
    with pytest.raises(ValueError, match="same shape"):
        ch.RoPE(8).rotate(q, k[:, :, :4], positions[:, :5])
    with pytest.raises(ValueError, match=r"head_dim=8"):
        ch.RoPE(8).rotate(q[..., :6], k[..., :6], positions)
    # the shapes that fit still work: (T,), (B, T) and (1, T)
    for good in (positions[0], positions, positions[:1]):
        assert ch.RoPE(8).rotate(q, k, good)[0].shape == q.shape


# --- seeds trained as one batched model
# ------------------------------------------------


def test_train_models_starts_where_train_model_starts() -> None:
    """Zero steps: every seed's model is exactly the fresh model of train_model(seed)
    (same calls on the same seed: bit-identical)."""
    config = ch.ModelConfig(vocab_size=7, d_model=16, n_heads=2, n_layers=1)
    train = ch.TrainConfig(steps=0, length=8, batch_size=4, warmup=1)
    models = ch.train_models(config, "copy", train, seeds=(3, 5), progress=False)
    for seed, model in zip((3, 5), models, strict=True):
        single = ch.train_model(config, "copy", train, seed=seed, progress=False)
        for (name, a), b in zip(
            model.state_dict().items(), single.state_dict().values(), strict=True
        ):
            assert torch.equal(a, b), (seed, name)


def test_train_models_follows_each_seeds_own_run() -> None:
    """A few steps: seed s of the batched run stays within rounding of train_model(s)
    (differences of float32 rounding, ~1e-7, not the ~1e-2 a step of lr 1e-2 makes),
    and the seeds differ from one another."""
    torch.set_num_threads(1)
    config = ch.ModelConfig(
        vocab_size=7, scheme="rope", d_model=16, n_heads=2, n_layers=1
    )
    train = ch.TrainConfig(steps=4, length=8, batch_size=8, lr=1e-2, warmup=2)
    models = ch.train_models(config, "copy", train, seeds=(0, 1, 2), progress=False)
    for seed, model in zip((0, 1, 2), models, strict=True):
        single = ch.train_model(config, "copy", train, seed=seed, progress=False)
        for a, b in zip(model.parameters(), single.parameters(), strict=True):
            torch.testing.assert_close(a, b, atol=1e-4, rtol=0)
    first, second = (dict(m.named_parameters()) for m in models[:2])
    assert (first["embed.weight"] - second["embed.weight"]).abs().max() > 0.1


def test_train_models_trains_every_seed() -> None:
    torch.set_num_threads(1)
    config = ch.ModelConfig(vocab_size=9, scheme="alibi", d_model=32, n_layers=1)
    train = ch.TrainConfig(steps=60, length=12, batch_size=32, lr=1e-2, warmup=6)
    models = ch.train_models(config, "max", train, seeds=(0, 1), progress=False)
    tokens, targets = ch.make_batch(
        "max", 256, 12, 8, torch.Generator().manual_seed(10_000)
    )
    baseline = (
        np.bincount(targets[targets >= 0].numpy()).max() / (targets >= 0).sum().item()
    )
    for model in models:
        assert not model.training
        accuracy = ch.accuracy_by_position(model, "max", 12, n_sequences=256)
        assert np.nanmean(accuracy) > baseline + 0.2


@pytest.mark.parametrize(
    "seeds, message",
    [
        ((), "non-empty"),
        ((0, 0), "distinct"),
        ((0, 1.5), "integers"),
        ((True,), "integers"),
    ],
)
def test_train_models_rejects_bad_seeds(seeds, message) -> None:
    config = ch.ModelConfig(vocab_size=5, d_model=16, n_heads=2, n_layers=1)
    with pytest.raises(ValueError, match=message):
        ch.train_models(config, "copy", ch.TrainConfig(steps=1), seeds=seeds)


def test_phase_similarity_by_hand() -> None:
    """cos((Delta - 3) theta_j) averaged over pairs: 1 at Delta = 3; by hand at 22 for
    pairs 0 and 1 (theta = 1 and 10000**(-1/8))."""
    assert ch.phase_similarity([3], (0, 1)).tolist() == [1.0]
    expected = (math.cos(19.0) + math.cos(19.0 * 10000 ** (-1 / 8))) / 2
    assert ch.phase_similarity([22], (0, 1))[0] == pytest.approx(expected, rel=1e-12)
    assert ch.phase_similarity([22], (0,), base=100.0)[0] == pytest.approx(
        math.cos(19.0)
    )


# --- hybrid stacks and training in threads
# ------------------------------------------------


def test_hybrid_layers_without_rope_compute_what_nope_computes() -> None:
    """nope_layers = every layer: the RoPE model equals a NoPE model with the same
    weights (the same operations on the same tensors: bit-identical); one NoPE layer:
    the model differs from both, and only the rotary layer still sees a shift of every
    position (RoPE: none), so the hybrid too ignores it."""
    torch.manual_seed(0)
    tokens = torch.randint(0, 9, (3, 11), generator=torch.Generator().manual_seed(2))
    rope = ch.TinyTransformer(
        ch.ModelConfig(vocab_size=9, scheme="rope", n_layers=2)
    ).eval()
    all_nope = ch.TinyTransformer(
        ch.ModelConfig(vocab_size=9, scheme="rope", n_layers=2, nope_layers=(0, 1))
    ).eval()
    nope = ch.TinyTransformer(
        ch.ModelConfig(vocab_size=9, scheme="nope", n_layers=2)
    ).eval()
    hybrid = ch.TinyTransformer(
        ch.ModelConfig(vocab_size=9, scheme="rope", n_layers=2, nope_layers=(1,))
    ).eval()
    for model in (all_nope, nope, hybrid):
        model.load_state_dict(rope.state_dict())
    with torch.no_grad():
        assert torch.equal(all_nope(tokens), nope(tokens))
        assert not torch.allclose(hybrid(tokens), rope(tokens), atol=1e-3)
        assert not torch.allclose(hybrid(tokens), nope(tokens), atol=1e-3)
        _, weights = hybrid(tokens, return_attention=True)
        _, rope_weights = rope(tokens, return_attention=True)
        assert torch.equal(weights[0], rope_weights[0])  # layer 0: RoPE's own attention
        shifted = hybrid(tokens, positions=torch.arange(11) + 30)
    torch.testing.assert_close(shifted, hybrid(tokens), atol=1e-4, rtol=0)


@pytest.mark.parametrize(
    "scheme, layers, message",
    [
        ("learned", (1,), "rotary schemes"),
        ("alibi", (0,), "rotary schemes"),
        ("rope", (2,), "0 .. 1"),
        ("rope", (0, 0), "distinct"),
        ("p-rope", (-1,), "0 .. 1"),
        ("rope", (True,), "distinct"),
    ],
)
def test_nope_layers_reject_what_is_not_a_layer_of_a_rotary_model(
    scheme, layers, message
) -> None:
    config = ch.ModelConfig(vocab_size=5, scheme=scheme, n_layers=2, nope_layers=layers)
    with pytest.raises(ValueError, match=message):
        ch.TinyTransformer(config)


def test_train_models_in_two_threads_equals_one_after_the_other() -> None:
    """The seed lock: two configurations trained side by side in threads get exactly the
    weights they get one after the other (one PyTorch thread each: the same operations
    on the same tensors, whichever thread runs them)."""
    from concurrent.futures import ThreadPoolExecutor

    torch.set_num_threads(1)
    train = ch.TrainConfig(steps=3, length=8, batch_size=4, warmup=1)
    configs = [
        ch.ModelConfig(vocab_size=7, scheme=s, d_model=16, n_heads=2, n_layers=1)
        for s in ("rope", "learned", "alibi", "nope")
    ]

    def run(config):
        return ch.train_models(config, "copy", train, seeds=(0, 1), progress=False)

    one_by_one = [run(c) for c in configs]
    with ThreadPoolExecutor(2) as pool:
        side_by_side = list(pool.map(run, configs))
    for a_models, b_models in zip(one_by_one, side_by_side, strict=True):
        for a, b in zip(a_models, b_models, strict=True):
            for x, y in zip(
                a.state_dict().values(), b.state_dict().values(), strict=True
            ):
                assert torch.equal(x, y)


# --- the rules that decide what the chapter may claim (issue 32, item 17)
# ---------------


def test_separated_by_hand() -> None:
    """The gap between the means must exceed the larger min-max range, strictly."""
    same = np.array([0.2, 0.5, 0.9])
    assert not ch.separated(same, same)  # a tie
    assert ch.separation_margin(same, same) == pytest.approx(-0.7)
    assert ch.separated([0.5] * 5, [0.4] * 5)  # no spread at all: any gap counts
    assert ch.separation_margin([0.5] * 5, [0.4] * 5) == pytest.approx(0.1)
    # the gap equals the larger range (exact binary fractions): not separated
    assert ch.separation_margin([0.0, 1.0], [-0.5, -0.5]) == 0.0
    assert not ch.separated([0.0, 1.0], [-0.5, -0.5])
    # overlapping ranges whose means are too close
    assert not ch.separated([0.5, 0.9], [0.1, 0.6])
    assert ch.separation_margin([0.5, 0.9], [0.1, 0.6]) == pytest.approx(-0.15)
    # the order matters
    assert ch.separated([0.9, 1.0], [0.1, 0.2]) and not ch.separated(
        [0.1, 0.2], [0.9, 1.0]
    )


def test_separated_lets_one_seed_against_the_rest_overlap() -> None:
    """One low seed of the better scheme below one high seed of the worse: the ranges
    [0.5, 1] and [0, 0.6] overlap by 0.1, and the rule still separates them (gap 0.78
    > 0.6), as the prose says it may."""
    better, worse = [0.5, 1.0, 1.0, 1.0, 1.0], [0.0, 0.0, 0.0, 0.0, 0.6]
    assert ch.separated(better, worse)
    assert ch.separation_margin(better, worse) == pytest.approx(0.78 - 0.6)
    assert max(worse) - min(better) == pytest.approx(0.1)  # the overlap


@settings(max_examples=200, deadline=None)
@given(
    better=st.lists(st.floats(0, 1), min_size=2, max_size=6),
    worse=st.lists(st.floats(0, 1), min_size=2, max_size=6),
)
def test_separated_ranges_overlap_by_less_than_the_smaller_range(better, worse) -> None:
    """What the prose claims about the rule: when separated, the overlap of the two
    min-max ranges, max(worse) - min(better), is below the smaller range."""
    if ch.separated(better, worse):
        overlap = max(worse) - min(better)
        smaller = min(np.ptp(better), np.ptp(worse))
        assert overlap < smaller + 1e-12


@pytest.mark.parametrize("values", [[], [[0.5, 0.6]], [0.5, float("nan")]])
def test_separated_rejects_what_is_not_one_number_per_seed(values) -> None:
    with pytest.raises(ValueError, match="one finite number per seed"):
        ch.separated(values, [0.5, 0.6])
    with pytest.raises(ValueError, match="one finite number per seed"):
        ch.separation_margin([0.5, 0.6], values)


def test_copying_head_by_hand() -> None:
    """The (layer, head) with the most weight at offset LAG = 3, not the most weight
    anywhere; a tie goes to the first (layer, head) in order."""
    profiles = torch.zeros(2, 4, 8)
    profiles[1, 2, 3] = 0.7
    profiles[0, 1, 3] = 0.6
    profiles[0, 0, 5] = 0.9  # more weight, at another offset
    assert ch.LAG == 3 and ch.copying_head(profiles) == (1, 2)
    profiles[0, 3, 3] = 0.7  # a tie with (1, 2): the earlier layer wins
    assert ch.copying_head(profiles) == (0, 3)
    for bad in (torch.zeros(4, 8), torch.zeros(2, 4, 3)):
        with pytest.raises(ValueError, match="layers, heads, offsets"):
            ch.copying_head(bad)


def test_weight_at_offsets_by_hand() -> None:
    """Uniform causal weights 1/(m+1) and previous-token weights, on the same queries
    m = first_query .. T - 1 for every offset."""
    T = 5
    uniform = (
        torch.ones(T, T, dtype=torch.float64).tril() / torch.arange(1, T + 1)[:, None]
    )[None]
    expected = (1 / 3 + 1 / 4 + 1 / 5) / 3  # queries m = 2, 3, 4
    got = ch.weight_at_offsets(uniform.repeat(2, 1, 1), (0, 2), first_query=2)
    np.testing.assert_allclose(got, [expected, expected], rtol=1e-12)
    previous = torch.zeros(1, T, T)
    previous[0, 0, 0] = 1.0
    previous[0, torch.arange(1, T), torch.arange(T - 1)] = 1.0
    assert ch.weight_at_offsets(previous, (1, 2, 0), first_query=2).tolist() == [
        1,
        0,
        0,
    ]
    with pytest.raises(ValueError, match="first_query"):
        ch.weight_at_offsets(previous, (3,), first_query=2)
    with pytest.raises(ValueError, match=r"\(B, T, T\)"):
        ch.weight_at_offsets(previous[0], (1,), first_query=2)


def test_hidden_offsets_zero_those_keys_and_renormalise_the_rest() -> None:
    """Layer 0 of a RoPE model with offsets 2 and 5 hidden: those weights are 0 in every
    head, every other weight is the intact weight divided by what the intact softmax
    left on the visible keys (the softmax of the remaining logits); the trained model
    itself is not changed, and the hidden model still ignores a shift of positions."""
    torch.manual_seed(0)
    model = ch.TinyTransformer(ch.ModelConfig(vocab_size=9, scheme="rope")).eval()
    tokens = torch.randint(0, 9, (3, 12), generator=torch.Generator().manual_seed(4))
    hidden = ch.with_hidden_offsets(model, [5, 2])
    with torch.no_grad():
        _, intact = model(tokens, return_attention=True)
        _, masked = hidden(tokens, return_attention=True)
        shifted = hidden(tokens, positions=torch.arange(12) + 40)
        again = hidden(tokens)
    assert (
        isinstance(model.position, ch.RoPE)
        and model.position.bias(torch.arange(4)) is None
    )
    offsets = torch.arange(12)[:, None] - torch.arange(12)[None, :]
    is_hidden = (offsets == 2) | (offsets == 5)
    for w in masked:
        assert (w[..., is_hidden] == 0).all()
    kept = intact[0].masked_fill(is_hidden, 0.0)
    torch.testing.assert_close(
        masked[0], kept / kept.sum(-1, keepdim=True), atol=1e-6, rtol=1e-5
    )
    torch.testing.assert_close(shifted, again, atol=1e-4, rtol=0)
    batch_positions = torch.arange(12).repeat(3, 1)  # (B, T) positions work too
    with torch.no_grad():
        torch.testing.assert_close(hidden(tokens, positions=batch_positions), again)


@pytest.mark.parametrize("offsets", [[0, 3], [], [2.5], [True]])
def test_hidden_offsets_reject_what_is_not_a_positive_offset(offsets) -> None:
    torch.manual_seed(0)
    model = ch.TinyTransformer(ch.ModelConfig(vocab_size=9, scheme="rope"))
    with pytest.raises(ValueError, match="positive integers"):
        ch.with_hidden_offsets(model, offsets)


def test_hidden_offsets_need_a_rope_model() -> None:
    torch.manual_seed(0)
    model = ch.TinyTransformer(ch.ModelConfig(vocab_size=9, scheme="alibi"))
    with pytest.raises(ValueError, match="RoPE model"):
        ch.with_hidden_offsets(model, [3])
