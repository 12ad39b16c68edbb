"""Stable names (services/links.py): a relative link, replaced in one rename."""
import os
import threading

from botgrpo.services.links import point


def test_point_makes_a_relative_link_and_moves_it(tmp_path):
    (tmp_path / "warm-aaa" / "model").mkdir(parents=True)
    (tmp_path / "warm-bbb" / "model").mkdir(parents=True)
    link = point(tmp_path / "warm", tmp_path / "warm-aaa")
    assert os.readlink(link) == "warm-aaa" and (link / "model").is_dir()
    point(tmp_path / "warm", tmp_path / "warm-bbb")
    assert os.readlink(link) == "warm-bbb"
    moved = tmp_path.parent / (tmp_path.name + "-moved")
    tmp_path.rename(moved)  # relative: the link survives moving or copying the folder
    assert (moved / "warm" / "model").is_dir()
    moved.rename(tmp_path)


def test_a_reader_never_sees_the_name_missing(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
    point(tmp_path / "latest", tmp_path / "a")
    stop, missing = threading.Event(), []

    def read():
        while not stop.is_set():
            if not (tmp_path / "latest").exists():
                missing.append(1)

    reader = threading.Thread(target=read)
    reader.start()
    for i in range(300):
        point(tmp_path / "latest", tmp_path / ("a", "b")[i % 2])
    stop.set()
    reader.join()
    assert not missing and not list(tmp_path.glob(".latest.*"))
