"""The vision page through AppTest, its figure builders, and the upload checks."""

import io

import numpy as np
import pytest
from apptest_support import chart_z, charts, open_app
from PIL import Image

from app.data import vision
from app.views import chart, patches


def patch_weights(at):
    return chart_z(at, "vision_weights")


def overlay(at):
    return chart_z(at, "vision_overlay", trace=1)


def encoded(array, fmt="PNG"):
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, fmt)
    return buffer.getvalue()


def noise(height, width, seed=0, channels=3):
    shape = (height, width, channels) if channels > 1 else (height, width)
    return np.random.default_rng(seed).integers(0, 256, shape, dtype=np.uint8)


def upload(at, name, data, mime="image/png"):
    at.button_group(key="vision_source").set_value("Upload").run()
    return at.file_uploader(key="vision_upload").set_value((name, data, mime)).run()


@pytest.mark.parametrize("screen", [(1280, 720), (1920, 1080)])
def test_presentation_mode_sizes_charts_by_their_labelled_rows_within_the_screen(screen):
    """The overlay's heatmap covers the image's pixels: no labels, so no growth (it grew
    to 24 px per pixel row, 5,600 px); the patch heatmap's 196 labelled rows grow it to
    the screen's height below the presenter bar and the slide's title, not to 4,900 px
    (nor to 1,776)."""
    specs = charts(open_app("vision", {"present": "1"}, _viewport=screen))
    heights = {key: spec["layout"]["height"] for key, spec in specs.items()}
    n_patches = len(specs["vision_weights"]["data"][0]["y"])
    assert n_patches > 64  # more rows than presentation mode gives room to
    room = screen[1] - chart.PRESENTER_BAR - chart.PRESENT_TITLE
    assert heights["vision_overlay"] == heights["vision_grid"] <= room
    assert room - 40 < heights["vision_weights"] <= room


def test_page_renders_the_sample_with_its_patches():
    at = open_app("vision")
    assert not at.exception
    assert {"vision_grid", "vision_overlay", "vision_weights"} <= set(charts(at))
    weights = patch_weights(at)
    assert weights.shape == (196, 196)  # 224 px in 16 px patches: 14 × 14
    np.testing.assert_allclose(weights.sum(axis=1), 1.0, atol=1e-5)
    assert overlay(at).shape == (224, 224)


def test_patch_slider_changes_the_grid():
    at = open_app("vision")
    at.select_slider(key="vision_patch").set_value(32).run()
    assert not at.exception
    assert patch_weights(at).shape == (49, 49)
    at.select_slider(key="vision_patch").set_value(28).run()
    assert patch_weights(at).shape == (64, 64)


def test_query_sliders_move_the_overlay_to_that_patchs_row():
    at = open_app("vision")
    before = overlay(at)
    at.slider(key="vision_row").set_value(10).run()
    at.slider(key="vision_col").set_value(11).run()
    after = overlay(at)
    assert not np.array_equal(before, after)
    weights = patch_weights(at)
    np.testing.assert_allclose(after[::16, ::16].ravel(), weights[10 * 14 + 11], rtol=1e-6)
    assert "(10, 11)" in charts(at)["vision_overlay"]["layout"]["title"]["text"]


def test_query_sliders_are_clamped_when_the_grid_shrinks():
    at = open_app("vision")
    at.slider(key="vision_row").set_value(13).run()
    at.select_slider(key="vision_patch").set_value(56).run()
    assert not at.exception
    assert at.slider(key="vision_row").value == 3


def test_tied_keys_and_positions_change_the_attention():
    at = open_app("vision")
    base = patch_weights(at)
    at.toggle(key="vision_tied").set_value(False).run()
    untied = patch_weights(at)
    at.selectbox(key="vision_position").set_value("none").run()
    no_position = patch_weights(at)
    assert not np.allclose(base, untied)
    assert not np.allclose(untied, no_position)


def test_a_non_image_upload_gives_a_clear_message():
    at = upload(open_app("vision"), "notes.png", b"not an image")
    assert not at.exception
    errors = " ".join(e.value for e in at.error)
    assert "not a PNG" in errors
    assert "sample image instead" in errors
    assert patch_weights(at).shape == (196, 196)  # still the sample


def test_an_oversized_upload_gives_a_clear_message():
    big = encoded(noise(1400, 1400))  # incompressible: about 5.6 MB
    assert len(big) > vision.MAX_BYTES
    at = upload(open_app("vision"), "big.png", big)
    assert not at.exception
    assert any("limit is 5 MB" in e.value for e in at.error)


def test_a_real_upload_is_shrunk_and_used():
    at = upload(open_app("vision"), "photo.jpg", encoded(noise(300, 600), "JPEG"), "image/jpeg")
    assert not at.exception
    assert not at.error
    assert any("Used at 256×128 pixels" in c.value for c in at.caption)
    assert patch_weights(at).shape == (8 * 16, 8 * 16)  # 128/16 rows × 256/16 columns


# --- the upload checks on their own ---------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"not an image", "not a PNG, JPEG or WebP"),
        (b"", "empty"),
        (b"GIF89a" + bytes(40), "not a PNG, JPEG or WebP"),
        (b"\x00" * (vision.MAX_BYTES + 1), "limit is 5 MB"),
    ],
)
def test_bad_bytes_are_rejected_with_a_message(data, message):
    with pytest.raises(vision.ImageRejectedError, match=message):
        vision.load_upload(data)


def test_truncated_png_is_rejected():
    data = encoded(noise(64, 64))
    with pytest.raises(vision.ImageRejectedError, match="damaged or truncated"):
        vision.load_upload(data[: len(data) // 2])


@pytest.mark.parametrize(("width", "height"), [(4097, 20), (20, 5000)])
def test_too_many_pixels_on_a_side_is_refused_before_decoding(width, height):
    data = encoded(np.zeros((height, width, 3), dtype=np.uint8))
    with pytest.raises(vision.ImageRejectedError, match="limit is 4,096×4,096"):
        vision.load_upload(data)


def test_a_decompression_bomb_is_refused():
    data = encoded(np.zeros((4100, 4100), dtype=np.uint8))  # small file, 16.8 million pixels
    with pytest.raises(vision.ImageRejectedError, match="4,096"):
        vision.load_upload(data)


def test_tiny_or_sliver_images_are_refused():
    with pytest.raises(vision.ImageRejectedError, match="at least 16"):
        vision.load_upload(encoded(noise(10, 10)))
    with pytest.raises(vision.ImageRejectedError, match="at least 16"):
        vision.load_upload(encoded(noise(20, 2000)))


@pytest.mark.parametrize(
    ("array", "fmt", "shape"),
    [
        (noise(100, 300), "PNG", (85, 256, 3)),
        (noise(40, 40, channels=1), "PNG", (40, 40, 3)),
        (noise(64, 32, channels=4), "PNG", (64, 32, 3)),
        (noise(512, 512), "JPEG", (256, 256, 3)),
        (noise(50, 80), "WEBP", (50, 80, 3)),
    ],
)
def test_good_images_come_back_as_rgb_within_the_working_size(array, fmt, shape):
    pixels = vision.load_upload(encoded(array, fmt))
    assert pixels.shape == shape
    assert pixels.dtype == np.uint8


def test_transparency_is_flattened_onto_white():
    clear = np.zeros((20, 20, 4), dtype=np.uint8)  # fully transparent black
    assert np.all(vision.load_upload(encoded(clear)) == 255)


def test_patch_sizes_leave_a_grid():
    assert vision.patch_sizes((224, 224, 3)) == [8, 12, 14, 16, 28, 32, 56]
    assert vision.patch_sizes((16, 300, 3)) == [8]


# --- figure builders ------------------------------------------------------------------------


def test_image_figure_draws_the_grid_the_query_and_the_overlay():
    image = noise(32, 48)
    overlay_map = np.kron(np.arange(6, dtype=float).reshape(2, 3), np.ones((16, 16)))
    fig = patches.image_figure(image, 16, (2, 3), (1, 2), overlay_map, "t")
    kinds = [trace.type for trace in fig.data]
    assert kinds == ["image", "heatmap", "scatter"]
    assert fig.data[1].zmax == 5.0
    assert np.asarray(fig.data[1].z).dtype == np.float32
    rect = fig.layout.shapes[0]
    assert (rect.x0, rect.x1, rect.y0, rect.y1) == (31.5, 47.5, 15.5, 31.5)
    assert len([x for x in fig.data[2].x if x is None]) == (3 + 1) + (2 + 1)  # grid lines
    assert [t.type for t in patches.image_figure(image, 16, (2, 3)).data] == ["image", "scatter"]


def test_patch_attention_heatmap_labels_patches_by_row_and_column():
    weights = np.full((6, 6), 1 / 6)
    fig = patches.attention_figure(weights, (2, 3), selected=4)
    assert list(fig.data[0].x) == ["0,0", "0,1", "0,2", "1,0", "1,1", "1,2"]
    assert fig.data[0].zmax == pytest.approx(1 / 6)
    assert np.asarray(fig.data[0].z).dtype == np.float32
