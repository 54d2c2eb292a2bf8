"""``tiles.tools.mxfp`` (E2M1 elements, E8M0 scales) against ml_dtypes' float4_e2m1fn and
float8_e8m0fnu."""

import ml_dtypes
import numpy as np
import pytest

from tiles.tools.mxfp import MXFP4Tensor, MXScaleTensor

torch = pytest.importorskip("torch")


def test_e2m1_from_float_rounds_ties_to_even_and_saturates(rng):
    values = np.concatenate([
        rng.standard_normal(500).astype(np.float32) * 4,
        np.float32([0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5.0, 7.0, 1e30, -np.inf, np.inf, 0.0, -0.0, 1e-30])])
    codes = MXFP4Tensor(torch.from_numpy(values)).data.numpy()
    expected = np.clip(values, -6, 6).astype(ml_dtypes.float4_e2m1fn).view(np.uint8)
    np.testing.assert_array_equal(codes, expected)


def test_e2m1_to_float_matches_every_code():
    codes = torch.arange(16, dtype=torch.uint8)
    t = MXFP4Tensor(size=16)
    t.data = codes
    expected = codes.numpy().view(ml_dtypes.float4_e2m1fn).astype(np.float32)
    np.testing.assert_array_equal(t.to(torch.float32).numpy(), expected)
    with pytest.raises(ValueError, match="NaN"):
        MXFP4Tensor(torch.tensor([1.0, float("nan")]))


@pytest.mark.parametrize("shape,dim", [((6, 7), 1), ((5, 4), 0), ((3, 2, 5), 2)])
def test_packing_puts_even_elements_low_and_round_trips(shape, dim):
    torch.manual_seed(sum(shape) + dim)
    t = MXFP4Tensor(size=shape).random()
    packed = t.to_packed_tensor(dim)
    assert packed.shape[dim] == (shape[dim] + 1) // 2 and packed.dtype == torch.uint8
    first = packed.select(dim, 0)
    assert torch.equal(first & 0xF, t.data.select(dim, 0))
    assert torch.equal(first >> 4, t.data.select(dim, 1))
    assert torch.equal(t.unpack_packed_tensor(packed, dim, shape), t.data)


@pytest.mark.parametrize("dim", [2, -1, 5])
def test_packing_along_a_missing_dimension_is_refused(dim):
    t = MXFP4Tensor(size=(4, 3)).random()
    for caught in (ValueError, AssertionError):  # tiles' and Triton's (whose tests catch the latter)
        with pytest.raises(caught, match=f"dim {dim} is not a dimension of a 2-d tensor"):
            t.to_packed_tensor(dim)


def test_e8m0_scales_match_ml_dtypes(rng):
    values = np.concatenate([np.exp2(rng.uniform(-140, 127.9, 300)).astype(np.float32),
                             np.float32([1.0, 3.0, 0.75, 2.0 ** -127, 2.0 ** 128 * 0.99])])
    codes = MXScaleTensor(torch.from_numpy(values)).data.numpy()
    floor_pow2 = np.exp2(np.floor(np.log2(values.astype(np.float64))))
    expected = np.clip(floor_pow2, 2.0 ** -127, 2.0 ** 127).astype(ml_dtypes.float8_e8m0fnu).view(np.uint8)
    np.testing.assert_array_equal(codes, expected)
    for bad in (0.0, -2.0, float("inf"), float("nan")):
        assert MXScaleTensor(torch.tensor([bad])).data.item() == 255
    t = MXScaleTensor(size=(4, 64)).random(low=0.25, high=8.0)
    assert int(t.data.min()) >= 125 and int(t.data.max()) <= 130
    decoded = t.to(torch.float32).numpy()
    np.testing.assert_array_equal(decoded, t.data.numpy().view(ml_dtypes.float8_e8m0fnu).astype(np.float32))
    nan = MXScaleTensor(size=1)
    nan.data = torch.tensor([255], dtype=torch.uint8)
    assert torch.isnan(nan.to(torch.float32)).all()
