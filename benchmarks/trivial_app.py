"""The floor for one slider step: one select_slider driving one 2×2 Plotly heatmap.

``benchmarks/bench_slider.py`` times a keyboard step of this slider against a step of
the attention page's scale slider, in the same browser and the same run.
"""

import numpy as np
import plotly.graph_objects as go
import streamlit as st

value = st.select_slider("Value", options=range(201), value=0, key="value")
z = np.array([[value, 200 - value], [value / 2, 100]], dtype=np.float32)
st.plotly_chart(go.Figure(go.Heatmap(z=z, zmin=0, zmax=200)), key="chart")
