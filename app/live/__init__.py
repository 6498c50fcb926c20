"""The live mechanism: charts that follow a control in the browser while it moves."""
