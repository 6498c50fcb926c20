"""Vision patches: an image cut into P×P patches that attend to each other like tokens."""

import streamlit as st

from app.data import vision
from app.state import controls, session
from app.views import equation, patches
from app.widgets import pickers
from app.words import equations
from engine.vision import POSITIONS, attention_overlay

POSITION_LABELS = {"2d": "2-D sinusoidal", "1d": "1-D sinusoidal (raster order)", "none": "None"}

st.title("Self-attention over image patches")
equation.show(equations.PATCH_EMBEDDING)
st.caption(
    "The Vision Transformer cuts an image into P×P patches, flattens each one, projects it "
    "to d_model features and adds its position (Dosovitskiy et al. 2020, eq. 1, here without "
    "the class token); from then on the patches are tokens. "
    "Projections are random but seeded, with the toy text model's d_model and seed: the "
    "picture shows the mechanism, not what a trained ViT has learned."
)

source = st.segmented_control(
    "Image", ["Sample", "Upload"], key="vision_source", default="Sample", required=True
)
image, image_key = vision.sample_image(), "sample"
if source == "Upload":
    uploaded = st.file_uploader(
        f"PNG, JPEG or WebP, at most {vision.MAX_BYTES // 2**20} MB and "
        f"{vision.MAX_SIDE:,}×{vision.MAX_SIDE:,} pixels",
        type=vision.UPLOAD_TYPES,
        key="vision_upload",
        max_upload_size=vision.MAX_BYTES // 2**20,
    )
    if uploaded is not None:
        digest, picture, problem = vision.uploaded_image(uploaded.getvalue())
        if problem:
            st.error(f"{controls.md_escape(problem)} Showing the sample image instead.", icon="🚫")
        else:
            image, image_key = picture, digest
            st.caption(
                f"Used at {image.shape[1]}×{image.shape[0]} pixels (long side at most "
                f"{vision.WORK_SIDE})."
            )

values = session.current()
left, middle, right = st.columns(3)
with left:
    sizes = vision.patch_sizes(image.shape)
    if st.session_state.get("vision_patch") not in sizes:
        st.session_state["vision_patch"] = 16 if 16 in sizes else sizes[-1]
    patch = st.select_slider("Patch size P (pixels)", sizes, key="vision_patch")
with middle:
    position = st.selectbox(
        "Position embedding", POSITIONS, key="vision_position", format_func=POSITION_LABELS.get
    )
with right:
    tied = st.toggle(
        "Keys use W_Q",
        value=True,
        key="vision_tied",
        help="On: keys use W_Q too, so q·k compares the two patches' projections (attention "
        "by similarity). Off: separate random W_Q and W_K make q·k an arbitrary (untrained) "
        "bilinear form.",
    )

run = vision.vision_run(image_key, patch, values["d_model"], values["seed"], position, tied, image)
n_rows, n_cols = run.grid
cropped = image[: n_rows * patch, : n_cols * patch]
if cropped.shape[:2] != image.shape[:2]:
    st.caption(
        f"{n_rows}×{n_cols} = {n_rows * n_cols} patches; the last "
        f"{image.shape[0] - cropped.shape[0]} rows and {image.shape[1] - cropped.shape[1]} "
        "columns of pixels do not fill a patch and are left out."
    )

left, right = st.columns(2)
with left:
    row = pickers.bounded_slider("Query patch: row", "vision_row", 0, n_rows - 1, n_rows // 4)
with right:
    col = pickers.bounded_slider("Query patch: column", "vision_col", 0, n_cols - 1, n_cols // 4)
query = row * n_cols + col

left, right = st.columns(2)
patches.show_image(
    left, "vision_grid", cropped, patch, run.grid, (row, col), title="Patches and the query"
)
overlay = attention_overlay(run.weights[query], run.grid, patch)
patches.show_image(
    right,
    "vision_overlay",
    cropped,
    patch,
    run.grid,
    (row, col),
    overlay,
    f"What patch ({row}, {col}) attends to",
    weights=run.weights[query],
)
patches.show_attention(st, "vision_weights", run.weights, run.grid, query)
