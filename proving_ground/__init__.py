"""The proving ground: what makes a realistic Kafka cluster for the tests, the benchmarks, the demo
and the notebooks, and what the product itself never imports (an import contract in
pyproject.toml checks that).

- `workload/`: a deterministic generator of coordinator history at scale, and `workload/live/`,
  real clients of every group kind driving a real broker;
- `demo.py`: `make demo`, the main job on the embedded broker while the live workload runs;
- `notebooks.py`: what the notebooks share (the demo's lake, its broker started again).
"""
