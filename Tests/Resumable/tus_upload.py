"""Uploads a file to a Jotter server with tuspy (a real tus 1.0 client), in chunks, with its
sha1 checksum extension; stops after `stop_after` chunks, then resumes with a new uploader from
the offset the server reports (HEAD), as a restarted client would. Prints the upload's URL.

usage: tus_upload.py URL FILE CHUNK_SIZE STOP_AFTER
"""
import sys

from tusclient import client


def main() -> None:
    url, path, chunk_size, stop_after = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    tus = client.TusClient(url)
    metadata = {"filename": "tuspy.bin", "filetype": "application/x-test"}
    first = tus.uploader(path, chunk_size=chunk_size, metadata=metadata, upload_checksum=True)
    for _ in range(stop_after):
        first.upload_chunk()
    # A new uploader on the same URL: it asks the server for the offset and goes on from there.
    second = tus.uploader(path, chunk_size=chunk_size, metadata=metadata, upload_checksum=True, url=first.url)
    offset_before = second.offset
    second.upload()
    print(second.url)
    print(offset_before)


if __name__ == "__main__":
    main()
