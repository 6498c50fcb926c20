"""The floor for one new text: one text box driving one 2×2 Plotly heatmap.

``benchmarks/bench_pretrained.py --floor`` types a new text into this app's box as it
types one into the page's, in the same browser and the same run: what Streamlit and
Plotly cost for a rerun on a new text, with no model and one chart.
"""

import numpy as np
import plotly.graph_objects as go
import streamlit as st

text = st.sidebar.text_area("Text", value="The cat sat on the mat.", key="text")
n = len(text.split())
z = np.array([[n, 200 - n], [n / 2, 100]], dtype=np.float32)
figure = go.Figure(go.Heatmap(z=z, zmin=0, zmax=200), layout={"title": {"text": f"{n} words"}})
st.plotly_chart(figure, key="chart")
