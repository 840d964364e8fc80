"""Screenshots of the web app's main screens for docs/: the list, editing a note, the conflict
dialog, and a phone-sized screen. Run by `scripts/browser-tests --screenshots`."""

import math
import os
import shutil
import struct
import sys
import tempfile
import time
import zlib

from selenium.webdriver.common.by import By

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import ROOT, Server, chrome, quit_chrome, wait  # noqa: E402

BINARY = os.environ.get("JOTTER_BINARY", os.path.join(ROOT, ".build/debug/jotter"))
OUTPUT = os.path.join(ROOT, "docs")

NOTES = [
    "Reading list\nThe Left Hand of Darkness, Piranesi, A Psalm for the Wild-Built",
    "Bike repair\nNew brake pads (front), check the chain, pump tyres to 4.5 bar",
    "Gift ideas for Sam\nA good chef's knife, or the pottery class she mentioned",
    "Flat viewing — Thursday 6pm\n12 Linden Road, second floor. Ask about heating costs and the lease length.",
    "Call the dentist\nMove the appointment to next week",
    "Weekend in Lisbon\nTram 28 early in the morning, pastéis de nata in Belém, sunset at Miradouro da Graça",
    "Team offsite agenda\n1. Roadmap review\n2. Hiring plan\n3. Retro on the launch\n4. Dinner at 7",
    "Groceries\nMilk, eggs, sourdough, tomatoes, basil, parmesan, olive oil",
]


def picture(path, width=320, height=240):
    """A small PNG (a sunset over the sea) to attach, written without any imaging library."""
    rows = []
    for y in range(height):
        row = bytearray([0])
        for x in range(width):
            t = y / height
            sun = math.hypot(x - width * 0.62, y - height * 0.55) < height * 0.16
            if y > height * 0.62:  # sea
                shade = 0.75 + 0.25 * math.sin(x / 9 + y / 3)
                row += bytes((int(40 * shade), int(90 * shade), int(140 * shade)))
            elif sun:
                row += bytes((255, 214, 120))
            else:  # sky
                row += bytes((int(250 - 60 * t), int(170 - 80 * t), int(110 + 40 * t)))
        rows.append(bytes(row))

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    with open(path, "wb") as file:
        file.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
                   + chunk(b"IDAT", zlib.compress(b"".join(rows), 9)) + chunk(b"IEND", b""))


def viewport(driver, width, height, scale=1, mobile=False):
    driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                           {"width": width, "height": height, "deviceScaleFactor": scale, "mobile": mobile})


def shot(driver, name):
    time.sleep(0.4)  # let transitions settle
    path = os.path.join(OUTPUT, name)
    driver.save_screenshot(path)
    print(f"wrote {os.path.relpath(path, ROOT)}")


def main():
    server = Server(BINARY)
    driver = chrome()
    folder = tempfile.mkdtemp(prefix="jotter-shots-")
    try:
        notes = [server.create(body) for body in NOTES]
        css = lambda selector: driver.find_element(By.CSS_SELECTOR, selector)  # noqa: E731
        ready = lambda: wait(driver, lambda d: css("#connection").get_attribute("data-state") == "live")  # noqa: E731

        viewport(driver, 1280, 800)
        driver.get(server.url + "/")
        ready()
        shot(driver, "web-list.png")

        photo, itinerary, video = (os.path.join(folder, name) for name in ("miradouro.png", "itinerary.pdf", "tram-28.mp4"))
        picture(photo)
        with open(itinerary, "wb") as file:
            file.write(b"%PDF-1.4\n" + os.urandom(180_000))
        with open(video, "wb") as file:
            file.write(os.urandom(24 * 1024 * 1024))
        lisbon = next(n for n in notes if n["body"].startswith("Weekend in Lisbon"))
        driver.get(f"{server.url}/#/notes/{lisbon['id']}")
        ready()
        css("#file-input").send_keys(f"{photo}\n{itinerary}")
        wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#attachment-list li")) == 2)
        css("#body").send_keys("\nDinner: Taberna da Rua das Flores")
        driver.set_network_conditions(offline=False, latency=0, download_throughput=-1, upload_throughput=4 * 1024 * 1024)
        css("#file-input").send_keys(video)
        wait(driver, lambda d: d.execute_script("return document.querySelector('#upload-list progress')?.value >= 40"), timeout=20)
        driver.execute_script("document.activeElement.blur()")
        shot(driver, "web-editing.png")
        css("#upload-list button").click()  # cancel the upload
        driver.delete_network_conditions()
        css("#save").click()
        wait(driver, lambda d: css("#save-state").text == "Saved")

        agenda = next(n for n in notes if n["body"].startswith("Team offsite"))
        driver.get(f"{server.url}/#/notes/{agenda['id']}")
        ready()
        wait(driver, lambda d: "Roadmap" in d.execute_script("return document.getElementById('body').value"))
        css("#body").send_keys("\n5. Book the train tickets")
        server.update(agenda["id"], agenda["body"] + "\n5. Karaoke after dinner?")
        wait(driver, lambda d: css("#editor-notice").is_displayed())
        css("#save").click()
        wait(driver, lambda d: css("#conflict-dialog").is_displayed())
        driver.execute_script("document.activeElement.blur()")
        shot(driver, "web-conflict.png")
        css('#conflict-actions [data-value="mine"]').click()
        wait(driver, lambda d: css("#save-state").text == "Saved")

        viewport(driver, 390, 844, scale=2, mobile=True)
        driver.get(server.url + "/")
        ready()
        shot(driver, "web-phone.png")
        driver.get(f"{server.url}/#/notes/{lisbon['id']}")
        ready()
        wait(driver, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#attachment-list li")) == 2)
        shot(driver, "web-phone-editing.png")
    finally:
        quit_chrome(driver)
        server.close()
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
