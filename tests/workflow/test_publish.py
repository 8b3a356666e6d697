"""``imagefolder-lmdb convert DATA s3://bucket/prefix`` (issue 44): converted and verified in a local
folder, each split sent as one multipart upload and read back; the replace rule as for a folder
(issue 49: other settings refused too, an object older than made_from compared by source and
settings); a missing bucket named before converting; an interrupted upload leaves no object and no
pending upload, a killed one is aborted by the next publish; the same command uploads again
without converting again. Against the session's SeaweedFS (tests/support/seaweed.py)."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from imagefolder_lmdb.convert import ConvertError
from imagefolder_lmdb.publish.s3_multipart import Credentials, S3Multipart
from imagefolder_lmdb.publish.upload import _send_parts
from imagefolder_lmdb.reader import LMDBReader
from support.interrupting import StartedCommands, wait_until_held
from support.seaweed import Seaweed
from support.workflow import Converted

CLI = str(Path(sys.executable).with_name("imagefolder-lmdb"))
SUMMARY = r"{url}: [\d.]+ MB, ETag \"[^\"]+\", uploaded in [\d.]+ s \([\d.,]+ MB/s, 1 parts\), 40 records read back"


def _start(commands: StartedCommands, command: list[str], hold: str, marker: Path) -> subprocess.Popen[str]:
    """``command`` parked at ``hold``, SIGINT at its default however the suite was started."""
    env = {**os.environ, "IMAGEFOLDER_LMDB_TEST_HOLD": hold, "IMAGEFOLDER_LMDB_TEST_HOLD_MARKER": str(marker)}
    return commands.start(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd="/")


def _multipart(url: str) -> S3Multipart:
    bucket, key = url.removeprefix("s3://").split("/", 1)
    credentials = Credentials.from_environment()
    assert credentials is not None
    return S3Multipart(bucket, key, credentials)


def _pending(url: str) -> list[tuple[str, str]]:
    upload = _multipart(url)
    return [(found.key, found.upload_id) for found in upload.pending() if found.key == upload.key]


def _exists(seaweed: Seaweed, url: str) -> bool:
    import urllib.error
    import urllib.request

    try:
        urllib.request.urlopen(seaweed.endpoint + "/" + url.removeprefix("s3://"), timeout=10).close()
    except urllib.error.HTTPError as exc:
        assert exc.code == 404, exc
        return False
    return True


def test_publish_refuses_a_foreign_object_then_replaces_it_and_a_rerun_uploads_nothing(
    image_tree: Path, converted: Converted, s3_env: Seaweed, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    shutil.copytree(image_tree, data)
    prefix = f"s3://datasets/{uuid.uuid4().hex}"
    url = s3_env.put("datasets", f"{prefix.removeprefix('s3://datasets/')}/train.lmdb", b"not ours")
    command = [CLI, "convert", str(data), prefix, "--split", "train", "--work", str(tmp_path / "w"), "--cores", "1"]
    refused = subprocess.run(command, capture_output=True, text=True, check=False, cwd="/")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    said = rf"{url} holds an object not made by imagefolder-lmdb \(8 bytes, \d{{4}}-\d\d-\d\d \d\d:\d\d UTC\): "
    assert re.search(said + r"not replaced. Give --overwrite .*object-changed error", refused.stderr), refused.stderr
    assert not (tmp_path / "w" / "train.lmdb").exists()  # refused before converting, not after
    published = subprocess.run([*command, "--overwrite"], capture_output=True, text=True, check=False, cwd="/")
    assert published.returncode == 0, published.stdout + published.stderr
    assert re.search(SUMMARY.format(url=re.escape(url)), published.stdout), published.stdout
    remote, local = LMDBReader(url, decode="bytes"), LMDBReader(tmp_path / "w" / "train.lmdb", decode="bytes")
    assert len(remote) == len(local) and remote.get_bytes(7) == local.get_bytes(7)
    info = subprocess.run([CLI, "info", url, "--json"], capture_output=True, text=True, check=False, cwd="/")
    assert info.returncode == 0, info.stderr
    assert json.loads(info.stdout)["file"] == url and json.loads(info.stdout)["length"] == len(local)
    again = subprocess.run(command, capture_output=True, text=True, check=False, cwd="/")
    assert again.returncode == 0 and f"{url}: up to date" in again.stdout, again.stdout + again.stderr
    assert _pending(url) == []
    upload = [sys.executable, "-m", "imagefolder_lmdb.publish.upload", str(converted.lmdb), url]
    other = subprocess.run(upload, capture_output=True, text=True, check=False)
    assert other.returncode == 1, other.stdout + other.stderr
    said = rf"{re.escape(url)} holds a dataset made from {re.escape(str(data))}, not {re.escape(str(converted.source))}"
    assert re.search(said + r" \([\d,]+ bytes, .* UTC\): not replaced. Give --overwrite", other.stderr), other.stderr


def test_an_interrupted_upload_leaves_nothing_and_the_same_command_uploads_without_converting(
    commands: StartedCommands, converted: Converted, s3_env: Seaweed, tmp_path: Path
) -> None:
    s3_env.put("datasets", "probe", b"")  # the bucket exists
    prefix = f"s3://datasets/{uuid.uuid4().hex}"
    url = f"{prefix}/train.lmdb"
    upload = [sys.executable, "-m", "imagefolder_lmdb.publish.upload", str(converted.lmdb), url]
    missing = subprocess.run([*upload[:-1], "s3://no-such-bucket/x/train.lmdb"], capture_output=True, text=True)
    assert missing.returncode == 1, missing.stderr
    assert "s3://no-such-bucket/x/train.lmdb: no such bucket 'no-such-bucket': create it first" in missing.stderr
    for hold, signum, code in (("upload-part", signal.SIGINT, 130), ("upload-complete", signal.SIGTERM, 143)):
        marker = tmp_path / f"held-{hold}"
        process = _start(commands, upload, hold, marker)
        wait_until_held(process, marker)
        assert _pending(url) != []  # the upload is under way
        process.send_signal(signum)
        _, errors = process.communicate(timeout=60)
        assert process.returncode == code, errors
        assert f"the upload to {url} was aborted (no object, no pending upload)" in errors
        assert not _exists(s3_env, url) and _pending(url) == []
    done = subprocess.run(upload, capture_output=True, text=True, check=False)
    assert done.returncode == 0 and re.search(SUMMARY.format(url=re.escape(url)), done.stdout), done.stderr


def test_convert_interrupted_while_uploading_exits_130_and_resumes_with_the_upload(
    converted: Converted, s3_env: Seaweed, tmp_path: Path, commands: StartedCommands
) -> None:
    work = tmp_path / "w"
    shutil.copytree(converted.workdir / "results", work)  # a finished local conversion of this source
    s3_env.put("datasets", "probe", b"")  # the bucket exists
    prefix = f"s3://datasets/{uuid.uuid4().hex}"
    command = [CLI, "convert", str(converted.source), prefix, "--split", "train", "--work", str(work), "--cores", "1"]
    marker = tmp_path / "held"
    process = _start(commands, command, "upload-part", marker)
    wait_until_held(process, marker)
    process.send_signal(signal.SIGINT)
    out, errors = process.communicate(timeout=60)
    assert process.returncode == 130, out + errors
    assert f"interrupted: the upload to {prefix}/train.lmdb was aborted (no object, no pending upload)" in errors
    assert "the same command uploads again without converting" in errors
    assert not _exists(s3_env, f"{prefix}/train.lmdb") and _pending(f"{prefix}/train.lmdb") == []
    again = subprocess.run(command, capture_output=True, text=True, check=False, cwd="/")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "Nothing to convert" in again.stdout and f"{prefix}/train.lmdb: " in again.stdout


def test_parts_are_sent_several_at_once(s3_env: Seaweed, tmp_path: Path) -> None:
    data = os.urandom(11 << 20)
    (tmp_path / "file").write_bytes(data)
    s3_env.put("datasets", "probe", b"")
    key = f"{uuid.uuid4().hex}/parts.bin"
    credentials = Credentials.from_environment()
    assert credentials is not None
    upload = S3Multipart("datasets", key, credentials)
    upload.create()
    etags = _send_parts(str(tmp_path / "file"), upload, len(data), 5 << 20, concurrency=3)
    assert len(etags) == 3
    upload.complete(etags)
    import urllib.request

    with urllib.request.urlopen(f"{s3_env.endpoint}/datasets/{key}", timeout=30) as answer:
        assert answer.read() == data


#: The upload of argv[1] to argv[2] as if nothing was there at the first check; prints what refused it.
UPLOAD_REFUSED = """
import json, os, sys
from imagefolder_lmdb.publish.s3_multipart import Credentials
from imagefolder_lmdb.publish.upload import PublishError, _upload_s3
try:
    _upload_s3(sys.argv[1], sys.argv[2], None, Credentials.from_environment(), 2)
    print(json.dumps({"refused": None}))
except PublishError as exc:
    print(json.dumps({"refused": str(exc)}))
sys.stdout.flush()
os._exit(0)  # never through obstore's runtime teardown (remote/leaving.py)
"""


def test_an_object_written_during_the_upload_is_not_replaced(converted: Converted, s3_env: Seaweed) -> None:
    """The second check, before completing: an object that appeared since the first is left as it is."""
    key = f"{uuid.uuid4().hex}/train.lmdb"
    url = s3_env.put("datasets", key, b"written meanwhile")
    # in a process of its own: the upload's checks run obstore, whose runtime survives neither a fork of this
    # worker (a forked child hung in it once an earlier test here had used obstore) nor one after it
    child = subprocess.run(
        [sys.executable, "-c", UPLOAD_REFUSED, str(converted.lmdb), url], capture_output=True, text=True, timeout=300
    )
    assert child.returncode == 0, child.stderr[-3000:]
    refused = json.loads(child.stdout)["refused"]
    assert re.search(re.escape(url) + " was written by someone else while this upload ran", refused or ""), refused
    assert _pending(url) == []
    import urllib.request

    with urllib.request.urlopen(f"{s3_env.endpoint}/datasets/{key}", timeout=30) as answer:
        assert answer.read() == b"written meanwhile"


def test_convert_from_python_publishes_to_a_url(converted: Converted, s3_env: Seaweed, tmp_path: Path) -> None:
    from imagefolder_lmdb import convert

    work = tmp_path / "w"
    shutil.copytree(converted.workdir / "results", work)  # converted already: the call only publishes
    s3_env.put("datasets", "probe", b"")
    prefix = f"s3://datasets/{uuid.uuid4().hex}"
    outputs = convert(converted.source, prefix, split="train", work=work, cores=1)
    assert outputs["train"].dataset == work / "train.lmdb"
    assert len(LMDBReader(f"{prefix}/train.lmdb")) == len(LMDBReader(converted.lmdb))
    with pytest.raises(ConvertError, match=r"unknown scheme s4://; the schemes read are s3://bucket/key"):
        convert(converted.source, "s4://datasets/x", split="train", work=work)


def _etag(seaweed: Seaweed, url: str) -> str:
    import urllib.request

    request = urllib.request.Request(seaweed.endpoint + "/" + url.removeprefix("s3://"), method="HEAD")
    with urllib.request.urlopen(request, timeout=10) as answer:
        return str(answer.headers["ETag"])


def _publish(file: Path, url: str, work: Path, *options: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "imagefolder_lmdb.publish.upload", str(file), url, "--work", str(work)]
    return subprocess.run([*command, *options], capture_output=True, text=True, check=False, timeout=120)


def test_other_settings_are_refused_without_overwrite_and_published_with_it(
    converted: Converted, s3_env: Seaweed, tmp_path: Path
) -> None:
    """The same source, --short-side 64, a fresh work folder: the object of the default settings stays,
    and the command says so before converting (on ImageNet, hours), not after."""
    prefix = f"s3://datasets/{uuid.uuid4().hex}"
    url = f"{prefix}/train.lmdb"
    s3_env.put("datasets", "probe", b"")
    assert _publish(converted.lmdb, url, tmp_path / "up").returncode == 0
    before = _etag(s3_env, url)
    command = [CLI, "convert", str(converted.source), prefix, "--split", "train", "--short-side", "64"]
    command += ["--work", str(tmp_path / "w"), "--cores", "1"]
    refused = subprocess.run(command, capture_output=True, text=True, check=False, cwd="/")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    said = rf"{re.escape(url)} holds a dataset made with encode short_side None, not 64 \([\d,]+ bytes, .* UTC\): "
    assert re.search(said + "not replaced. Give --overwrite", refused.stderr), refused.stderr
    assert _etag(s3_env, url) == before
    assert not (tmp_path / "w" / "train.lmdb").exists() and "Snakemake" not in refused.stdout  # before converting
    published = subprocess.run([*command, "--overwrite"], capture_output=True, text=True, check=False, cwd="/")
    assert published.returncode == 0, published.stdout + published.stderr
    assert f"replacing {url}" in published.stdout, published.stdout
    info = subprocess.run([CLI, "info", url, "--json"], capture_output=True, text=True, check=False, cwd="/")
    assert json.loads(info.stdout)["settings"]["encode"]["short_side"] == 64, info.stdout + info.stderr


def _without_made_from(dataset: Path, copy: Path, **encode: object) -> bytes:
    """``dataset`` as written before datasets recorded what they were made from (no ``made_from`` in
    its meta), with ``encode`` settings of its own; the file's bytes."""
    import lmdb

    shutil.copy(dataset, copy)
    with lmdb.open(str(copy), subdir=False, lock=False) as env, env.begin(write=True) as txn:
        document = json.loads(txn.get(b"meta/json"))
        del document["made_from"]
        document["settings"]["encode"].update(encode)
        txn.put(b"meta/json", json.dumps(document).encode())
    return copy.read_bytes()


def test_an_object_older_than_made_from_is_compared_by_source_and_encode_settings(
    converted: Converted, s3_env: Seaweed, tmp_path: Path
) -> None:
    key = f"{uuid.uuid4().hex}/train.lmdb"
    url = s3_env.put("datasets", key, _without_made_from(converted.lmdb, tmp_path / "q80.lmdb", quality=80))
    refused = _publish(converted.lmdb, url, tmp_path / "w")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    said = rf"{re.escape(url)} holds a dataset made with encode quality 80, not 95 \([\d,]+ bytes, .* UTC\): "
    assert re.search(said + "not replaced. Give --overwrite", refused.stderr), refused.stderr
    s3_env.put("datasets", key, _without_made_from(converted.lmdb, tmp_path / "same.lmdb"))
    replaced = _publish(converted.lmdb, url, tmp_path / "w")
    assert replaced.returncode == 0, replaced.stdout + replaced.stderr
    assert f"replacing {url}" in replaced.stdout and re.search(SUMMARY.format(url=re.escape(url)), replaced.stdout)


def test_a_missing_bucket_is_named_before_anything_is_converted(
    converted: Converted, s3_env: Seaweed, tmp_path: Path
) -> None:
    work = tmp_path / "w"
    prefix = f"s3://no-such-bucket-{uuid.uuid4().hex[:8]}/imagenet"
    command = [CLI, "convert", str(converted.source), prefix, "--split", "train", "--work", str(work), "--cores", "1"]
    refused = subprocess.run(command, capture_output=True, text=True, check=False, cwd="/")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    bucket = prefix.removeprefix("s3://").split("/")[0]
    assert f"{prefix}: no such bucket '{bucket}': create it first (`aws s3 mb s3://{bucket}`" in refused.stderr
    assert not work.exists() and "Snakemake" not in refused.stdout + refused.stderr  # nothing was converted


def test_info_and_verify_of_a_prefix_take_each_dataset_under_it(converted: Converted, s3_env: Seaweed) -> None:
    folder = uuid.uuid4().hex
    data = converted.lmdb.read_bytes()
    urls = [s3_env.put("datasets", f"{folder}/imagenet/{split}.lmdb", data) for split in ("train", "val")]
    s3_env.put("datasets", f"{folder}/imagenet/notes.txt", b"not a dataset")
    for prefix in (f"s3://datasets/{folder}/imagenet", f"s3://datasets/{folder}/imagenet/"):
        shown = subprocess.run([CLI, "info", prefix], capture_output=True, text=True, check=False, cwd="/")
        assert shown.returncode == 0, shown.stderr
        assert [line.split(": ")[0] for line in shown.stdout.splitlines() if line.startswith("s3://")] == urls
    listed = subprocess.run(
        [CLI, "info", f"s3://datasets/{folder}/imagenet", "--json"], capture_output=True, text=True, check=False
    )
    assert [entry["file"] for entry in json.loads(listed.stdout)["datasets"]] == urls, listed.stderr
    empty = subprocess.run([CLI, "info", f"s3://datasets/{folder}/"], capture_output=True, text=True, check=False)
    assert empty.returncode == 1 and f"s3://datasets/{folder}/: no .lmdb object under this prefix" in empty.stderr
    checked = subprocess.run([CLI, "verify", f"s3://datasets/{folder}/imagenet"], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert all(url in checked.stdout for url in urls), checked.stdout  # each dataset, not the prefix as one


def test_a_killed_upload_is_aborted_by_the_next_publish_and_another_is_only_named(
    converted: Converted, s3_env: Seaweed, tmp_path: Path
) -> None:
    s3_env.put("datasets", "probe", b"")
    url = f"s3://datasets/{uuid.uuid4().hex}/train.lmdb"
    work, marker = tmp_path / "w", tmp_path / "held"
    command = [sys.executable, "-m", "imagefolder_lmdb.publish.upload", str(converted.lmdb), url, "--work", str(work)]
    env = {**os.environ, "IMAGEFOLDER_LMDB_TEST_HOLD": "upload-part", "IMAGEFOLDER_LMDB_TEST_HOLD_MARKER": str(marker)}
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        wait_until_held(process, marker)  # a part is sent: the upload is pending
    finally:
        os.killpg(process.pid, signal.SIGKILL)  # as a power cut or an OOM kill would
        process.communicate(timeout=30)
    [record] = (work / "uploads").iterdir()
    recorded = json.loads(record.read_text())
    assert recorded["url"] == url and _pending(url) == [(url.split("/", 3)[3], recorded["upload_id"])]
    other = _multipart(url)
    other.create()  # another writer's upload of the same key, running or not
    try:
        again = _publish(converted.lmdb, url, work)
        assert again.returncode == 0, again.stdout + again.stderr
        assert (
            f"aborted the pending upload {recorded['upload_id']} to {url} left by an interrupted publish "
            f"(recorded in {record})" in again.stdout
        ), again.stdout
        assert (
            f"note: {url} has 1 other pending upload, not started by this work folder and not aborted" in again.stdout
        )
        assert f"{other.upload_id} (started " in again.stdout
        assert _pending(url) == [(other.key, other.upload_id)] and not record.exists()
    finally:
        other.abort()
