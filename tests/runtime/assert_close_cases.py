"""assert_close cases run by tiles and by Triton 3.9 (test_testing_triton.py records Triton's outcomes)."""

import numpy as np

CASES = {
    "nan_and_inf_within_atol": (np.array([1.0, np.nan, np.inf]), np.array([1.005, np.nan, np.inf]), {}),
    "beyond_the_default_atol": (np.array([1.0, 2.0]), np.array([1.0, 2.02]), {}),
    "rtol_is_relative_to_y": (np.array([1000.0, 1.0]), np.array([999.0, 1.0]), {"atol": 0, "rtol": 1.0005e-3}),
    "rtol_within": (np.array([1000.0, 1.0]), np.array([1001.0, 1.0]), {"atol": 0, "rtol": 1e-3}),
    "one_element_nan_vs_nan": (float("nan"), float("nan"), {}),
    "nan_vs_nan": (np.array([np.nan, 1.0]), np.array([np.nan, 1.0]), {}),
    "nan_vs_a_number": (np.array([np.nan, 1.0]), np.array([1.0, 1.0]), {}),
    "inf_vs_minus_inf": (np.array([np.inf, 1.0]), np.array([-np.inf, 1.0]), {}),
    "inf_vs_a_large_number": (np.array([np.inf, 1.0]), np.array([1e308, 1.0]), {"atol": 1e300}),
    "minus_zero_vs_zero": (np.array([-0.0, 1.0]), np.array([0.0, 1.0]), {"atol": 0, "rtol": 0}),
    "int64_beyond_2_53": (np.array([2**62 + 1, 0], np.int64), np.array([2**62, 0], np.int64), {"atol": 0, "rtol": 0}),
    "int32_off_by_one": (np.array([7, -3], np.int32), np.array([7, -2], np.int32), {"atol": 0}),
    "shapes_3_and_4": (np.zeros(3), np.zeros(4), {}),
    "shapes_3_and_1": (np.zeros(3), np.zeros(1), {}),
    "shapes_1_and_scalar": (np.zeros(1), 0.0, {}),
    "shape_3_and_a_scalar": (np.zeros(3), 0.0, {}),
    "shapes_2x3_and_3": (np.zeros((2, 3)), np.zeros(3), {}),
    "a_list_and_an_array": ([1.0, 2.0], np.array([1.0, 2.0]), {}),
    "atol_as_a_function": (np.array([1.0, 2.0], np.float32), np.array([1.0, 2.05], np.float32),
                           {"atol": lambda dt: 0.1}),
    "rtol_as_a_function": (np.array([100.0, 2.0]), np.array([101.0, 2.0]), {"atol": 0, "rtol": lambda dt: 0.01}),
    "fp16_and_fp32": (np.array([1.0, 2.0], np.float16), np.array([1.0, 2.001], np.float32), {}),
    "bools": (np.array([True, False]), np.array([True, True]), {"atol": 0}),
}


def outcomes(assert_close):
    found = {}
    for name, (x, y, kwargs) in CASES.items():
        try:
            assert_close(x, y, **kwargs)
            found[name] = "pass"
        except AssertionError:
            found[name] = "fail"
    return found
