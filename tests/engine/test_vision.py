"""Patches, patch attention and the sample image."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image

from engine.resources import ASSETS
from engine.vision import (
    attention_overlay,
    patch_embedding,
    patch_positions,
    patchify,
    run_vision,
    sample_image,
    unpatchify,
)


@settings(max_examples=50, deadline=None)
@given(
    st.integers(1, 40), st.integers(1, 40), st.sampled_from([1, 3]), st.integers(1, 12), st.data()
)
def test_patchify_round_trips_on_the_cropped_image(height, width, channels, patch, data):
    patch = min(patch, height, width)
    seed = data.draw(st.integers(0, 2**16))
    image = np.random.default_rng(seed).integers(0, 256, (height, width, channels), dtype=np.uint8)
    patches, grid = patchify(image, patch)
    assert grid == (height // patch, width // patch)
    assert patches.shape == (grid[0] * grid[1], patch * patch * channels)
    cropped = image[: grid[0] * patch, : grid[1] * patch]
    np.testing.assert_array_equal(unpatchify(patches, grid, patch), cropped)


def test_patches_are_numbered_row_by_row_with_channels_innermost():
    image = np.arange(4 * 6 * 2).reshape(4, 6, 2)
    patches, grid = patchify(image, 2)
    assert grid == (2, 3)
    np.testing.assert_array_equal(patches[1], image[0:2, 2:4].ravel())  # row 0, column 1
    np.testing.assert_array_equal(patches[3], image[2:4, 0:2].ravel())  # row 1, column 0


def test_grey_images_get_one_channel_and_bad_patches_are_refused():
    patches, grid = patchify(np.zeros((10, 7)), 3)
    assert (patches.shape, grid) == ((6, 9), (3, 2))
    with pytest.raises(ValueError, match="patch must be between"):
        patchify(np.zeros((10, 7)), 8)
    with pytest.raises(ValueError, match="shape"):
        patchify(np.zeros(10), 1)


def test_overlay_spreads_each_weight_over_its_patch():
    row = np.arange(6, dtype=float)
    overlay = attention_overlay(row, (2, 3), 4)
    assert overlay.shape == (8, 12)
    assert overlay[5, 9] == row[1 * 3 + 2]
    assert np.all(overlay[:4, :4] == 0.0)


def test_position_embeddings():
    two_d = patch_positions((3, 4), 8, "2d")
    assert two_d.shape == (12, 8)
    np.testing.assert_array_equal(two_d[0, :4], two_d[3, :4])  # same row, same first half
    np.testing.assert_array_equal(two_d[1, 4:], two_d[5, 4:])  # same column, same second half
    assert patch_positions((3, 4), 8, "1d").shape == (12, 8)
    assert not patch_positions((3, 4), 8, "none").any()
    with pytest.raises(ValueError, match="unknown position"):
        patch_positions((3, 4), 8, "3d")


def test_patch_embedding_is_seeded():
    patches = np.random.default_rng(0).uniform(-1, 1, (5, 48))
    first = patch_embedding(patches, 16, seed=1)
    assert first.shape == (5, 16)
    np.testing.assert_array_equal(first, patch_embedding(patches, 16, seed=1))
    assert not np.allclose(first, patch_embedding(patches, 16, seed=2))


@pytest.mark.parametrize("position", ["2d", "1d", "none"])
@pytest.mark.parametrize("tied", [False, True])
def test_attention_rows_over_patches_sum_to_one(position, tied):
    run = run_vision(sample_image(64), 16, 16, 0, position, tied)
    assert run.grid == (4, 4)
    assert run.weights.shape == (16, 16)
    np.testing.assert_allclose(run.weights.sum(axis=1), 1.0)
    assert run.output.shape == (16, 16)
    assert run.patches.min() >= -1.0
    assert run.patches.max() <= 1.0


def test_without_positions_identical_patches_attend_identically():
    image = np.zeros((32, 32, 3), dtype=np.uint8)
    image[:16] = 200  # the top two patches are identical, the bottom two too
    weights = run_vision(image, 16, 8, 0, "none", False).weights
    np.testing.assert_allclose(weights[0], weights[1])
    np.testing.assert_allclose(weights[2], weights[3])


def test_float_and_uint8_images_agree():
    image = sample_image(48)
    as_uint8 = run_vision(image, 8, 8, 0).weights
    as_float = run_vision(image / 255.0, 8, 8, 0).weights
    np.testing.assert_allclose(as_uint8, as_float)


def test_sample_image_is_deterministic_and_the_shipped_png_is_it():
    image = sample_image()
    assert image.shape == (224, 224, 3)
    assert image.dtype == np.uint8
    np.testing.assert_array_equal(image, sample_image())
    assert not np.array_equal(image, sample_image(seed=1))
    assert len(np.unique(image.reshape(-1, 3), axis=0)) > 50  # a gradient, not flat colour
    with Image.open(ASSETS / "sample.png") as png:
        np.testing.assert_array_equal(np.asarray(png.convert("RGB")), image)
