"""Figures: every title stays inside its figure; throughput is drawn as tokens/s and GFLOP/s (and
a fraction of a measured GEMM peak when the file has one), never as a panel of zero MFU; the
iso-backbone view has loss against backbone and against total parameters."""
import numpy as np
import pytest

import make_runs as mk
from postprocess import analyze
from postprocess.figures import loss_vs_aspect_ratio_figure, throughput_vs_shape_figure
from postprocess.isobackbone import isobackbone_figure, isobackbone_table
from postprocess.released import load_released_models

SHAPES = [(2, 128), (4, 96), (8, 64)]


def _titles_inside(fig):
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    box = fig.bbox
    texts = [fig._suptitle] + [ax.title for ax in fig.axes]
    for text in (t for t in texts if t is not None and t.get_text()):
        extent = text.get_window_extent(renderer)
        assert extent.x0 >= box.x0 - 0.5 and extent.x1 <= box.x1 + 0.5, text.get_text()
        assert extent.y0 >= box.y0 - 0.5 and extent.y1 <= box.y1 + 0.5, text.get_text()


def _cpu_sweep(directory, **kw):
    mk.write_sweep(directory, suite="demo", designs=["pre_ln", "hc"], shapes=SHAPES,
                   learning_rates=[3e-3], vocab=257, tokens_per_second=2000.0, mfu=0.0,
                   loss=lambda a, L, d, lr: 3.0 - 0.01 * L, **kw)
    return analyze(directory).panels


def test_loss_vs_aspect_ratio_title_fits_a_one_panel_figure(tmp_path):
    fig = loss_vs_aspect_ratio_figure(_cpu_sweep(tmp_path), load_released_models())
    assert len(fig.axes) >= 1 and "\n" in fig._suptitle.get_text()  # wrapped, not cut off
    _titles_inside(fig)


def test_cpu_throughput_shows_gflops_and_no_mfu_panel(tmp_path):
    panels = _cpu_sweep(tmp_path)
    fig = throughput_vs_shape_figure(panels)
    labels = [ax.get_ylabel() for ax in fig.axes]
    assert labels == ["tokens / s (median)", "GFLOP/s (median)"]
    _titles_inside(fig)
    run = panels[0].cell("hc", (8, 64)).best
    gflops = fig.axes[1].get_lines()[1].get_ydata()[-1]  # HC, deepest shape
    assert gflops == pytest.approx(2000.0 * run.attrs["flops_per_token"] / 1e9)


def test_a_measured_gemm_peak_adds_the_fraction_panel(tmp_path):
    panels = _cpu_sweep(tmp_path, extra_attrs={"gemm_peak_gflops": 50.0})
    fig = throughput_vs_shape_figure(panels)
    assert [ax.get_ylabel() for ax in fig.axes][-1] == "% of measured GEMM peak"
    run = panels[0].cell("pre_ln", (2, 128)).best
    fraction = fig.axes[2].get_lines()[0].get_ydata()[0]
    assert fraction == pytest.approx(100 * 2000.0 * run.attrs["flops_per_token"] / 1e9 / 50.0)


def test_isobackbone_view_plots_loss_against_backbone_and_total(tmp_path):
    shapes = [(16, 1248), (42, 768), (84, 544)]
    mk.write_sweep(tmp_path / "runs", suite="isobackbone300m", designs=["hc"], shapes=shapes,
                   learning_rates=[2e-3], loss=lambda a, L, d, lr: 2.8 - 0.001 * L)
    panel = analyze(tmp_path / "runs").panel("isobackbone300m")
    row = dict(zip(isobackbone_table(panel).columns, isobackbone_table(panel).rows[0]))
    assert row["best shape vs widest"].startswith("-0.0680 at L84 (")
    assert row["best shape vs widest"].endswith("total): separated")
    figure = isobackbone_figure(panel, tmp_path / "fig", pdf=False)
    assert figure.png.read_bytes()[:4] == b"\x89PNG"
    backbone = [r.params_backbone for r in (panel.cell("hc", s).best for s in panel.shapes)]
    assert np.ptp(backbone) > 0  # the synthetic shapes differ a little, as the real ones do


def test_a_shape_without_a_completed_run_is_marked_in_the_loss_figure(tmp_path):
    mk.write_sweep(tmp_path, suite="demo", designs=["hc"], shapes=SHAPES, learning_rates=[3e-3],
                   vocab=257, loss=lambda a, L, d, lr: None if L == 8 else 3.0 - 0.01 * L)
    fig = loss_vs_aspect_ratio_figure(analyze(tmp_path).panels, [])
    crosses = [line for line in fig.axes[0].get_lines() if line.get_marker() == "x"]
    assert [list(line.get_xdata()) for line in crosses if len(line.get_xdata())] == [[8.0]]
    assert "no completed run" in [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


def test_released_models_are_overlaid_only_at_a_comparable_scale_and_axes_are_labelled(tmp_path):
    # A ~1M-parameter demo: no released model (the smallest is over 10M) is drawn on it, while
    # a 400M panel gets the ones within 10x of its size.
    _cpu_sweep(tmp_path / "demo")
    demo = analyze(tmp_path / "demo").panels
    released = load_released_models()
    fig = loss_vs_aspect_ratio_figure(demo, released)
    ax = fig.axes[0]
    assert not [line for line in ax.get_lines() if line.get_linestyle() == ":"]
    mk.write_sweep(tmp_path / "big", suite="main400m", designs=["pre_ln"],
                   shapes=[(16, 1216), (24, 1024)], learning_rates=[2e-3],
                   loss=lambda a, L, d, lr: 2.8)
    big = analyze(tmp_path / "big").panels
    from postprocess.figures import comparable_models
    near = comparable_models(big[0], released)
    assert near and all(40e6 <= m.params_total <= 4.1e9 for m in near)
    assert comparable_models(demo[0], released) == []
    for figure in (fig, loss_vs_aspect_ratio_figure(big, released),
                   throughput_vs_shape_figure(demo)):
        for axes in figure.axes:
            if axes.get_label() == "<colorbar>" or not axes.get_lines():
                continue
            assert axes.get_xlabel() and axes.get_ylabel(), axes
