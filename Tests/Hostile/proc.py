"""What the hostile-input scripts read about the server process from /proc."""
import os


def rss_kib(pid):
    """Resident memory of `pid`, in KiB."""
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def open_files(pid):
    """File descriptors `pid` has open."""
    return len(os.listdir(f"/proc/{pid}/fd"))
