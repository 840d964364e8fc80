"""The web app in a real browser (headless Chromium) against the real `jotter serve`.

Run through `scripts/browser-tests` (which `make test` calls); `JOTTER_BINARY` names the binary.
"""

import datetime
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request
import zoneinfo

from selenium.common.exceptions import NoAlertPresentException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402
from harness import ROOT, Server, chrome, quit_chrome, wait, wait_until  # noqa: E402

BINARY = os.environ.get("JOTTER_BINARY", os.path.join(ROOT, ".build/debug/jotter"))
TIMEZONE = "Asia/Kolkata"  # UTC+5:30: a viewer far from UTC, with minutes in the offset

server = None
driver = None
# Whether the server has a trash (`GET /notes/trash`, issue 32 item 3, built beside the web app's
# part): the tests of Undo as a restore and of Recently Deleted run only then, and by themselves
# once it has landed.
TRASH = False


def setUpModule():
    global server, driver, TRASH
    server = Server(BINARY)
    driver = chrome(timezone=TIMEZONE)
    TRASH = server.request("GET", "/notes/trash")[0] == 200


def needs_trash(test):
    if not TRASH:
        test.skipTest("the server has no trash yet (GET /notes/trash, issue 32 item 3): enabled once it has")


def tearDownModule():
    if driver:
        quit_chrome(driver)
    if server:
        server.close()


def css(selector, scope=None):
    return (scope or driver).find_element(By.CSS_SELECTOR, selector)


def all_css(selector, scope=None):
    return (scope or driver).find_elements(By.CSS_SELECTOR, selector)


def titles():
    """The titles in the list, read at once (the list is re-rendered as events arrive)."""
    return driver.execute_script("return [...document.querySelectorAll('#notes .note-title')].map((e) => e.textContent)")


def link(note_id):
    return css(f'.note-link[data-id="{note_id}"]')


def body_text():
    return driver.execute_script("return document.getElementById('body').value")


NETWORK = {"latency": 0, "downloadThroughput": -1, "uploadThroughput": -1}


def go_offline():
    """The page's network cut (DevTools' emulation): every request fails as with no network."""
    driver.execute_cdp_cmd("Network.enable", {})
    driver.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": True, **NETWORK})


def go_online():
    driver.execute_cdp_cmd("Network.emulateNetworkConditions", {"offline": False, **NETWORK})
    driver.execute_cdp_cmd("Network.disable", {})


def type_text(text):
    """`text` as the note's whole text, as typing it would leave it (an `input` event)."""
    driver.execute_script("""const area = document.getElementById('body');
        area.value = arguments[0];
        area.dispatchEvent(new Event('input'));""", text)


def leave_page():
    """Unloads the page (answering a "leave the page?" left by the test before)."""
    driver.get("about:blank")
    try:
        driver.switch_to.alert.accept()
    except NoAlertPresentException:
        pass


def open_app(path="/", autosave=True):
    """Loads the app in a new document and waits until the list is shown and live updates are on.

    Going through about:blank matters: a URL that differs from the current one only in its
    fragment would not load a new page, and the test would inherit the last one's state (such
    as a save still in flight). `autosave=False` holds automatic saves, for tests that look at
    unsaved text."""
    leave_page()
    driver.get(server.url + path)
    wait(driver, lambda d: css("#notes").get_attribute("aria-busy") == "false", message="list loaded")
    wait(driver, lambda d: css("#connection").get_attribute("data-state") == "live", message="live updates on")
    if not autosave:
        driver.execute_script("document.body.dataset.autosaveDelay = '3600000'")


def page_state():
    """What the page shows, for a failure message."""
    return driver.execute_script("""return {url: location.href, state: document.getElementById('save-state').textContent,
        toast: document.getElementById('toast').hidden ? null : document.getElementById('toast-text').textContent,
        dialog: document.querySelector('dialog[open] h2')?.textContent ?? null}""")


def save():
    css("#save").click()
    wait(driver, lambda d: css("#save-state").text == "Saved", message=f"saved ({page_state()})")


class BrowserTest(unittest.TestCase):
    def tearDown(self):
        # The page must never break its own policy or throw.
        problems = [entry["message"] for entry in driver.get_log("browser")
                    if "Content Security Policy" in entry["message"] or "Uncaught" in entry["message"]]
        self.assertEqual(problems, [])


class Notes(BrowserTest):
    def test_create_shows_date_and_time_like_the_original_app(self):
        open_app(autosave=False)
        css("#new-note").click()
        textarea = css("#body")
        self.assertEqual(driver.switch_to.active_element, textarea)
        textarea.send_keys("Groceries\nmilk, eggs, bread")
        self.assertEqual(css("#save-state").text, "Unsaved changes")
        save()
        note = next(n for n in server.notes() if n["body"] == "Groceries\nmilk, eggs, bread")
        self.assertTrue(driver.current_url.endswith(f"#/notes/{note['id']}"))
        item = link(note["id"])
        self.assertEqual(titles()[0], "Groceries")  # a new note comes first
        self.assertEqual(css(".note-title", item).text, "Groceries")
        self.assertEqual(css(".note-preview", item).text, "milk, eggs, bread")
        # EE MMM d yyyy and h:mm a, in the viewer's time zone.
        created = datetime.datetime.strptime(note["created_at"], "%Y-%m-%d %H:%M:%S").replace(tzinfo=datetime.timezone.utc)
        local = created.astimezone(zoneinfo.ZoneInfo(TIMEZONE))
        self.assertEqual(css(".note-day", item).text, f"{local:%a %b} {local.day} {local:%Y}")
        self.assertEqual(css(".note-time", item).text, f"{local.hour % 12 or 12}:{local:%M} {local:%p}")

    def test_edit(self):
        note = server.create("Draft\nfirst words")
        open_app(f"/#/notes/{note['id']}")
        wait(driver, lambda d: body_text() == "Draft\nfirst words")
        css("#body").send_keys(" and more")
        save()
        self.assertEqual(server.note(note["id"])["body"], "Draft\nfirst words and more")
        self.assertEqual(server.note(note["id"])["version"], 2)
        wait(driver, lambda d: css(".note-preview", link(note["id"])).text == "first words and more")

    def test_delete_asks_first(self):
        note = server.create("Delete me")
        open_app(f"/#/notes/{note['id']}")
        wait(driver, lambda d: body_text() == "Delete me")
        css("#delete").click()
        dialog = css("#confirm-dialog")
        self.assertTrue(dialog.is_displayed())
        self.assertIn("Delete me", css("#confirm-text").text)
        # It goes to the trash, so it does not say the opposite first.
        self.assertNotIn("can't be undone", css("#confirm-text").text)
        self.assertIn("moved to Recently Deleted", css("#confirm-text").text)
        all_css("#confirm-actions button")[0].click()  # Cancel: nothing happens
        self.assertFalse(dialog.is_displayed())
        self.assertIsNotNone(server.note(note["id"]))
        css("#delete").click()
        css('#confirm-actions [data-value="delete"]').click()
        wait(driver, lambda d: not all_css(f'.note-link[data-id="{note["id"]}"]'), message="removed from the list")
        self.assertTrue(css("#editor").get_attribute("hidden") is not None)
        # Deleted on the server at once (into its trash), said as what happened here, with Undo
        # for a few seconds.
        self.assertIsNone(server.note(note["id"]))
        self.assertEqual(css("#toast-text").text, "Note deleted")
        self.assertEqual(css("#toast-action").text, "Undo")
        # (It stays while the keyboard is on Undo: moved away, it goes a few seconds later.)
        driver.execute_script("document.activeElement.blur()")
        wait(driver, lambda d: not css("#toast").is_displayed(), message="the Undo offer goes")
        self.assertEqual(server.note(note["id"]), None)
        self.assertNotIn("elsewhere", css("#toast-text").text)

    def test_undo_delete_restores_the_note_from_the_trash(self):
        needs_trash(self)
        note = server.create("Undo me\nplease")
        open_app(f"/#/notes/{note['id']}")
        wait(driver, lambda d: body_text() == "Undo me\nplease")
        css("#delete").click()
        css('#confirm-actions [data-value="delete"]').click()
        wait(driver, lambda d: css("#toast").is_displayed() and css("#toast-text").text == "Note deleted")
        self.assertEqual(all_css(f'.note-link[data-id="{note["id"]}"]'), [])
        self.assertIsNone(server.note(note["id"]))  # in the trash
        css("#toast-action").click()
        wait(driver, lambda d: body_text() == "Undo me\nplease", message="the note is open again")
        self.assertTrue(driver.current_url.endswith(f"#/notes/{note['id']}"))
        wait(driver, lambda d: all_css(f'.note-link[data-id="{note["id"]}"]'), message="listed again")
        self.assertEqual(server.note(note["id"])["body"], "Undo me\nplease")  # same id, same text

    def test_after_a_delete_the_keyboard_is_on_undo_then_on_the_next_note(self):
        """The keyboard went to the page's body after a delete, so the 5 s Undo could not be
        reached without a mouse. It goes to Undo (the message, an alert, is announced, and stays
        while the keyboard is there); once the message goes, to the note listed after."""
        needs_trash(self)
        server.create("Listed after it")
        note = server.create("Deleted with the keyboard")
        server.create("Listed before it")
        open_app(f"/#/notes/{note['id']}")
        wait(driver, lambda d: body_text() == "Deleted with the keyboard")

        def delete():
            css("#delete").click()
            css('#confirm-actions [data-value="delete"]').click()
            wait(driver, lambda d: css("#toast").is_displayed() and css("#toast-text").text == "Note deleted",
                 message=f"deleted ({page_state()})")

        delete()
        self.assertEqual(driver.switch_to.active_element.get_attribute("id"), "toast-action")
        press(Keys.ENTER)  # Undo
        wait(driver, lambda d: body_text() == "Deleted with the keyboard", message="restored and open again")
        self.assertEqual(server.note(note["id"])["body"], "Deleted with the keyboard")
        # (Restored, it is listed first now, above the note written last.)
        listed = driver.execute_script("return [...document.querySelectorAll('.note-link')].map((e) => e.dataset.id)")
        following = listed[listed.index(note["id"]) + 1]
        delete()
        self.assertEqual(driver.switch_to.active_element.get_attribute("id"), "toast-action")
        time.sleep(6.5)  # past the 5 s the offer lasts
        self.assertTrue(css("#toast").is_displayed(), "the offer stays while the keyboard is on it")
        press(Keys.ESCAPE)
        wait(driver, lambda d: not css("#toast").is_displayed(), message="dismissed")
        wait(driver, lambda d: d.switch_to.active_element.get_attribute("data-id") == following,
             message=f"the keyboard on the next note, {following}")

    def test_autosave(self):
        note = server.create("Autosaved")
        open_app(f"/#/notes/{note['id']}")
        wait(driver, lambda d: body_text() == "Autosaved")
        css("#body").send_keys(" as I type")
        # No Save click: a moment after typing stops it is saved, with If-Match, and says so.
        wait(driver, lambda d: css("#save-state").text == "Saved" and server.note(note["id"])["body"] == "Autosaved as I type",
             timeout=15, message=f"autosaved ({page_state()})")
        self.assertEqual(server.note(note["id"])["version"], 2)
        # A new note is created by typing alone, once it has text.
        css("#new-note").click()
        css("#body").send_keys("Typed, never saved by hand")
        wait(driver, lambda d: any(n["body"] == "Typed, never saved by hand" for n in server.notes()), timeout=15)
        created = next(n for n in server.notes() if n["body"] == "Typed, never saved by hand")
        wait(driver, lambda d: d.current_url.endswith(f"#/notes/{created['id']}") and css("#save-state").text == "Saved")

    def test_autosave_never_overwrites_a_newer_version(self):
        note = server.create("Base text\nsecond line")
        open_app(f"/#/notes/{note['id']}")
        wait(driver, lambda d: body_text() == "Base text\nsecond line")
        driver.execute_script("document.body.dataset.autosaveDelay = '1500'")
        server.update(note["id"], "Changed elsewhere\nsecond line")
        wait(driver, lambda d: body_text() == "Changed elsewhere\nsecond line")
        # An edit that races a save made elsewhere: the automatic save names the version it was
        # made from, and the server merges both; nothing is asked.
        driver.execute_script("""
            const area = document.getElementById('body');
            area.value = 'Changed elsewhere\\nsecond line, mine';
            area.dispatchEvent(new Event('input'));""")
        server.update(note["id"], "Changed again elsewhere\nsecond line")
        wait_until(lambda: server.note(note["id"])["body"] == "Changed again elsewhere\nsecond line, mine", timeout=15,
                   message=f"merged ({page_state()})")
        wait(driver, lambda d: body_text() == "Changed again elsewhere\nsecond line, mine" and css("#save-state").text == "Saved")
        self.assertFalse(css("#conflict-dialog").is_displayed())
        self.assertFalse(css("#editor-notice").is_displayed())

    def test_too_large_a_note_says_the_limit_once(self):
        open_app("/#/new", autosave=False)
        driver.execute_script("""
            const area = document.getElementById('body');
            area.value = 'x'.repeat(1100000);
            area.dispatchEvent(new Event('input'));""")
        css("#save").click()
        wait(driver, lambda d: css("#toast").is_displayed(), timeout=15, message="an error")
        self.assertEqual(css("#toast-text").text, "This note is too large to save: Notes can be at most 1 MiB. "
                         "It is kept on this device: shorten it, and it is saved.")
        wait(driver, lambda d: css("#save-state").text == "Not saved", message=f"kept ({page_state()})")
        self.assertEqual(len(body_text()), 1100000)
        # Shortened, it is saved (and nothing is left waiting for the tests after this one).
        driver.execute_script("""
            const area = document.getElementById('body');
            area.value = 'Short enough now';
            area.dispatchEvent(new Event('input'));""")
        save()
        wait_until(lambda: kept("outbox") == [], message="nothing left waiting")

    def test_an_edit_over_the_limit_is_sent_once_and_kept_on_this_device(self):
        """A `413` is final for that text: the automatic save was tried again and again (2 s,
        5 s, 10 s, then every 30 s), each refused. It is sent once, kept on this device (held,
        as an edit refused from the outbox), and the user is told how large a note may be."""
        note = server.create("Growing\nshort for now")
        open_app(f"/#/notes/{note['id']}")
        wait(driver, lambda d: body_text() == "Growing\nshort for now")
        driver.execute_script("""
            window.__writes = 0;
            const original = window.fetch;
            window.fetch = (url, options = {}) => {
              if (String(url).startsWith('/notes') && ['PUT', 'POST'].includes(options.method)) window.__writes += 1;
              return original(url, options);
            };
            const area = document.getElementById('body');
            area.value = 'Growing\\n' + 'x'.repeat(1100000);
            area.dispatchEvent(new Event('input'));""")
        wait(driver, lambda d: css("#toast").is_displayed(), timeout=15, message=f"refused ({page_state()})")
        time.sleep(8)  # the old retries came after 2 s and 5 s more
        self.assertEqual(driver.execute_script("return window.__writes"), 1)
        self.assertEqual(css("#toast-text").text, "This note is too large to save: Notes can be at most 1 MiB. "
                         "It is kept on this device: shorten it, and it is saved.")
        self.assertEqual(len(body_text()), len("Growing\n") + 1100000)
        self.assertEqual(css("#save-state").text, "Not saved")
        self.assertIn("Notes can be at most 1 MiB", css("#editor-notice-text").text)
        self.assertEqual(css("#connection-text").text, "1 change not saved")
        self.assertEqual([(entry["kind"], bool(entry["held"])) for entry in kept("outbox")], [("edit", True)])
        self.assertEqual(server.note(note["id"])["body"], "Growing\nshort for now")
        # Shortened, it is saved.
        driver.execute_script("""
            const area = document.getElementById('body');
            area.value = 'Growing\\nshorter again';
            area.dispatchEvent(new Event('input'));""")
        wait_until(lambda: server.note(note["id"])["body"] == "Growing\nshorter again", timeout=15,
                   message=f"saved once shorter ({page_state()})")
        wait(driver, lambda d: css("#save-state").text == "Saved", message="saved")
        wait_until(lambda: kept("outbox") == [], message="nothing left waiting")

    def test_search(self):
        server.create("Quince jam recipe")
        server.create("Walk the dog")
        open_app()
        search = css("#search")
        search.send_keys("quince")
        wait(driver, lambda d: titles() == ["Quince jam recipe"], message="search results")
        self.assertIn("1 match", css("#list-status").text)
        search.send_keys("zzzz")
        wait(driver, lambda d: "No notes match" in css("#list-message").text)
        search.clear()
        search.send_keys(Keys.ENTER)
        wait(driver, lambda d: "Walk the dog" in titles())

    def test_paging_with_load_more(self):
        paged = [server.create(f"Paging note {number}") for number in range(55)]
        total = len(server.notes())
        open_app()
        self.assertEqual(len(all_css("#notes li")), 50)
        self.assertIn("50+ notes", css("#list-status").text)
        # Edited elsewhere while the first page is shown: one on the page still to load (the
        # first written, now 55th) and one shown. Each moves to the top at once; the next page,
        # which follows the change order, neither repeats nor loses one.
        server.update(paged[0]["id"], "Paging note 0, edited")
        wait(driver, lambda d: titles()[0] == "Paging note 0, edited", message="a note from the next page comes first")
        server.update(paged[40]["id"], "Paging note 40, edited")
        wait(driver, lambda d: titles()[:2] == ["Paging note 40, edited", "Paging note 0, edited"], message="then a shown one")
        self.assertEqual(len(all_css("#notes li")), 51)
        more = css("#load-more")
        more.click()
        # 51 shown and the 50 next ones, each once.
        wait(driver, lambda d: len(all_css("#notes li")) == min(total, 101), message="the next page")
        ids = [element.get_attribute("data-id") for element in all_css(".note-link")]
        self.assertEqual(len(ids), len(set(ids)))  # no duplicates
        # The server's order: the last edited first.
        listed = [n["id"] for n in server.request("GET", "/notes?order=updated&limit=1000")[2]["notes"]]
        self.assertEqual(ids, listed[:len(ids)])
        self.assertEqual(ids[:2], [paged[40]["id"], paged[0]["id"]])
        self.assertEqual(ids[2:5], [paged[54]["id"], paged[53]["id"], paged[52]["id"]])

    def test_the_last_edited_note_comes_first(self):
        first = server.create("Written first\nA")
        time.sleep(1.1)  # the times have seconds: the edit's is not the creation's
        second = server.create("Written second\nB")
        open_app()
        self.assertEqual(titles()[:2], ["Written second", "Written first"])
        time.sleep(1.1)
        link(first["id"]).click()
        wait(driver, lambda d: body_text() == "Written first\nA")
        css("#body").send_keys(", edited")
        save()
        # Here at once, with the time of the edit (the list shows when a note was last edited).
        wait(driver, lambda d: titles()[:2] == ["Written first", "Written second"], message="the edited note first")
        edited = server.note(first["id"])
        self.assertNotEqual(edited["updated_at"], edited["created_at"])
        shown = css("time", link(first["id"]))
        when = datetime.datetime.strptime(edited["updated_at"], "%Y-%m-%d %H:%M:%S").replace(tzinfo=datetime.timezone.utc)
        self.assertEqual(shown.get_attribute("datetime"), when.strftime("%Y-%m-%dT%H:%M:%S.000Z"))
        local = when.astimezone(zoneinfo.ZoneInfo(TIMEZONE))
        self.assertEqual(css(".note-time", link(first["id"])).text, f"{local.hour % 12 or 12}:{local:%M} {local:%p}")
        self.assertTrue(shown.get_attribute("title").startswith("Last edited "))
        # The server lists it so too: after a reload it is still first.
        open_app()
        self.assertEqual(titles()[:2], ["Written first", "Written second"])
        # An edit by another client moves its note to the top as it happens.
        server.update(second["id"], "Written second\nB, edited by the API")
        wait(driver, lambda d: titles()[:2] == ["Written second", "Written first"], message="live edit first")
        self.assertEqual(css(".note-preview", link(second["id"])).text, "B, edited by the API")

    def test_errors_are_shown_in_words(self):
        open_app("/#/notes/987654")
        toast = css("#toast")
        wait(driver, lambda d: toast.is_displayed())
        self.assertEqual(css("#toast-text").text, "There is no note 987654: it may have been deleted.")
        # A link to a missing note leads back to the list, never to an empty "New note".
        wait(driver, lambda d: css("#editor").get_attribute("hidden") is not None, message="editor closed")
        self.assertTrue(css("#placeholder").is_displayed())
        self.assertEqual(css("body").get_attribute("data-view"), "list")
        self.assertFalse(driver.current_url.endswith("987654"))
        # The error stays until a later success makes it stale.
        css("#new-note").click()
        css("#body").send_keys("After the error")
        wait(driver, lambda d: not toast.is_displayed(), timeout=15, message="stale error cleared")
        self.assertTrue(any(n["body"] == "After the error" for n in server.notes()))


class Live(BrowserTest):
    def test_changes_from_a_second_window_and_the_api_appear(self):
        open_app()
        first = driver.current_window_handle
        driver.switch_to.new_window("window")
        try:
            open_app()
            css("#new-note").click()
            css("#body").send_keys("Written in the second window")
            save()
        finally:
            driver.close()
            driver.switch_to.window(first)
        wait(driver, lambda d: "Written in the second window" in titles(), message="live create")
        note = next(n for n in server.notes() if n["body"] == "Written in the second window")
        server.update(note["id"], "Changed by the API")
        wait(driver, lambda d: "Changed by the API" in titles(), message="live update")
        server.delete(note["id"])
        wait(driver, lambda d: "Changed by the API" not in titles(), message="live delete")

    def test_pages_left_behind_hold_no_connection(self):
        # A browser allows six connections to one server. Each page left behind (kept in the
        # back/forward cache) used to keep its event stream open, until the requests of the
        # page in front waited for a free connection for half a minute.
        note = server.create("Opened many times")
        for _ in range(8):
            open_app(f"/#/notes/{note['id']}", autosave=False)
        wait(driver, lambda d: body_text() == "Opened many times")
        css("#body").send_keys(", saved at once")
        css("#save").click()
        wait(driver, lambda d: css("#save-state").text == "Saved", timeout=5, message=f"saved without waiting ({page_state()})")

    def test_open_note_follows_changes_when_not_edited(self):
        note = server.create("Before")
        open_app(f"/#/notes/{note['id']}")
        wait(driver, lambda d: body_text() == "Before")
        server.update(note["id"], "After")
        wait(driver, lambda d: body_text() == "After", message="editor updated")
        self.assertEqual(css("#save-state").text, "Saved")


@unittest.skipUnless(harness.TLS, "over HTTP/1.1 a browser opens at most six connections to a server")
class Tabs(BrowserTest):
    def test_twenty_tabs_share_one_connection_and_all_stay_live(self):
        """Over HTTPS the browser speaks HTTP/2: each tab's event stream is a stream on one
        connection, so twenty tabs are all live and a change reaches every one of them."""
        first = driver.current_window_handle
        open_app()
        # (The page itself comes through the service worker, whose answers name no protocol: the
        # list's request, which it leaves alone, says which one the browser spoke.)
        protocols = driver.execute_script("""return performance.getEntriesByType('resource')
            .filter((e) => new URL(e.name).pathname === '/notes').map((e) => e.nextHopProtocol)""")
        self.assertEqual(set(protocols), {"h2"})
        tabs = []
        try:
            for _ in range(19):
                driver.switch_to.new_window("tab")
                tabs.append(driver.current_window_handle)
                driver.get(server.url + "/")
            for tab in [first] + tabs:
                driver.switch_to.window(tab)
                wait(driver, lambda d: css("#connection").get_attribute("data-state") == "live", timeout=20,
                     message="every tab live")
            status, _, metrics = server.request("GET", "/metrics")
            self.assertEqual(status, 200)
            streams = int(re.search(r"^jotter_event_streams (\d+)$", metrics, re.M).group(1))
            self.assertGreaterEqual(streams, 20, metrics)
            self.assertRegex(metrics, r'jotter_http_requests_by_protocol_total\{protocol="HTTP/2"\} [1-9]')
            # One browser, one origin: its tabs share a connection (HTTP/1.1 would need twenty).
            connections = int(re.search(r'^jotter_http_connections\{protocol="HTTP/2"\} (\d+)$', metrics, re.M).group(1))
            self.assertLessEqual(connections, 2, metrics)
            note = server.create("Seen by twenty tabs")
            for tab in [first] + tabs:
                driver.switch_to.window(tab)
                wait(driver, lambda d: "Seen by twenty tabs" in titles(), message="the new note in every tab")
        finally:
            for tab in tabs:
                driver.switch_to.window(tab)
                driver.close()
            driver.switch_to.window(first)
        server.delete(note["id"])


# Makes every save name a version the server never had, so it answers 409 /problems/unknown-base
# (what it says when the version an edit was made from is no longer kept): the rare case where
# the app must ask.
UNKNOWN_BASE = """
    const original = window.fetch;
    window.fetch = (url, options = {}) => {
      const json = options.method === 'PUT' && options.body ? JSON.parse(options.body) : {};
      if ('base_version' in json) options = { ...options, body: JSON.stringify({ ...json, base_version: 999999 }) };
      return original(url, options);
    };"""


class Conflicts(BrowserTest):
    def start_conflict(self, text):
        note = server.create(f"{text} original")
        open_app(f"/#/notes/{note['id']}", autosave=False)
        wait(driver, lambda d: body_text() == f"{text} original")
        css("#body").send_keys(" + mine")
        server.update(note["id"], f"{text} theirs")
        # Unsaved text is never replaced; its save is merged, so nothing asks yet.
        wait_until(lambda: driver.execute_script("return document.getElementById('announcer').textContent").startswith(
            "This note was changed elsewhere too"), message="told of the change")
        self.assertFalse(css("#editor-notice").is_displayed())
        self.assertEqual(body_text(), f"{text} original + mine")
        driver.execute_script(UNKNOWN_BASE)
        css("#save").click()
        dialog = css("#conflict-dialog")
        wait(driver, lambda d: dialog.is_displayed(), message=f"conflict dialog ({page_state()})")
        self.assertIn("no longer keeps", css("#conflict-text").text)
        self.assertEqual(css("#conflict-theirs").text, f"{text} theirs")
        self.assertEqual(css("#conflict-mine").text, f"{text} original + mine")
        return note

    def test_keep_editing_then_compare_again(self):
        note = self.start_conflict("Later")
        self.choose(None)
        # The text stays, unsaved; a notice offers the choice again.
        wait(driver, lambda d: css("#editor-notice").is_displayed(), message="notice")
        self.assertIn("could not be merged", css("#editor-notice-text").text)
        self.assertEqual(body_text(), "Later original + mine")
        self.assertEqual(server.note(note["id"])["body"], "Later theirs")
        css("#editor-notice-actions button").click()
        wait(driver, lambda d: css("#conflict-dialog").is_displayed(), message="the dialog again")
        self.choose("mine")
        wait(driver, lambda d: css("#save-state").text == "Saved")
        self.assertEqual(server.note(note["id"])["body"], "Later original + mine")

    def choose(self, value):
        if value is None:
            all_css("#conflict-actions button")[0].click()  # Keep editing
        else:
            css(f'#conflict-actions [data-value="{value}"]').click()
        wait(driver, lambda d: not css("#conflict-dialog").is_displayed())

    def test_overwrite(self):
        note = self.start_conflict("Overwrite")
        self.choose("mine")
        wait(driver, lambda d: css("#save-state").text == "Saved")
        self.assertEqual(server.note(note["id"])["body"], "Overwrite original + mine")
        self.assertFalse(css("#editor-notice").is_displayed())

    def test_reload_theirs(self):
        note = self.start_conflict("Reload")
        self.choose("theirs")
        wait(driver, lambda d: body_text() == "Reload theirs")
        self.assertEqual(server.note(note["id"])["body"], "Reload theirs")

    def test_keep_both(self):
        note = self.start_conflict("Both")
        self.choose("both")
        # The new note says it is the copy: two notes of one title could not be told apart.
        wait(driver, lambda d: any(n["body"] == "Both original + mine (copy)" for n in server.notes()))
        self.assertEqual(server.note(note["id"])["body"], "Both theirs")
        copy = next(n for n in server.notes() if n["body"] == "Both original + mine (copy)")
        wait(driver, lambda d: driver.current_url.endswith(f"#/notes/{copy['id']}"))
        self.assertEqual(body_text(), "Both original + mine (copy)")
        wait(driver, lambda d: "Both original + mine (copy)" in titles(), message="the copy listed by its marked title")
        self.assertIn("Both theirs", titles())

    def test_keep_both_marks_the_title_line(self):
        """The mark goes after the title (the first line that is not blank), never into the text below it."""
        open_app("/")
        marked = driver.execute_script("""return import('/assets/format.js').then((format) =>
            ['Title\\nbody', '\\n  Shopping  \\nmilk', '', '   '].map(format.markedAsCopy))""")
        self.assertEqual(marked, ["Title (copy)\nbody", "\n  Shopping (copy)\nmilk", "(copy)", "(copy)\n   "])

    def test_deleted_elsewhere_keeps_the_text(self):
        note = server.create("Gone soon")
        open_app(f"/#/notes/{note['id']}", autosave=False)
        wait(driver, lambda d: body_text() == "Gone soon")
        css("#body").send_keys(" but edited")
        server.delete(note["id"])
        wait(driver, lambda d: "deleted elsewhere" in css("#editor-notice-text").text)
        self.assertEqual(body_text(), "Gone soon but edited")
        css("#editor-notice-actions .primary").click()  # save as a new note
        wait(driver, lambda d: any(n["body"] == "Gone soon but edited" for n in server.notes()))


class Merging(BrowserTest):
    """Saves name the version their text was made from: the server merges an edit made against an
    older version with what was saved since, and the app takes the merged text in."""

    def test_a_stale_edit_in_one_tab_is_merged_with_another_tabs_edit(self):
        note = server.create("Packing list\npassport\ncharger")
        open_app(f"/#/notes/{note['id']}", autosave=False)
        wait(driver, lambda d: body_text() == "Packing list\npassport\ncharger")
        first = driver.current_window_handle
        # The first tab edits the last line and does not save yet.
        css("#body").send_keys(Keys.CONTROL, Keys.END)
        css("#body").send_keys("\nsunscreen")
        driver.switch_to.new_window("window")
        try:
            # Meanwhile another tab changes the title and saves.
            open_app(f"/#/notes/{note['id']}", autosave=False)
            wait(driver, lambda d: body_text() == "Packing list\npassport\ncharger")
            css("#body").send_keys(Keys.CONTROL, Keys.HOME)
            css("#body").send_keys("Summer ")
            save()
        finally:
            driver.close()
            driver.switch_to.window(first)
        self.assertEqual(server.note(note["id"])["body"], "Summer Packing list\npassport\ncharger")
        # The first tab's text was made from version 1: kept as typed, then merged when saved.
        self.assertEqual(body_text(), "Packing list\npassport\ncharger\nsunscreen")
        save()
        merged = "Summer Packing list\npassport\ncharger\nsunscreen"
        self.assertEqual(server.note(note["id"])["body"], merged)
        self.assertEqual(body_text(), merged)
        self.assertFalse(css("#conflict-dialog").is_displayed())
        self.assertFalse(css("#editor-notice").is_displayed())  # clean: nothing to say
        revisions = server.request("GET", f"/notes/{note['id']}/revisions")[2]["revisions"]
        self.assertTrue(revisions[0]["merged"])
        # The caret stays after what was typed, now shifted by the merged title.
        self.assertEqual(driver.execute_script("return document.getElementById('body').selectionStart"), len(merged))
        wait(driver, lambda d: css(".note-title", link(note["id"])).text == "Summer Packing list")

    def test_an_overlap_keeps_both_and_is_shown(self):
        note = server.create("Shopping\nmilk\nbread")
        open_app(f"/#/notes/{note['id']}", autosave=False)
        wait(driver, lambda d: body_text() == "Shopping\nmilk\nbread")
        driver.execute_script("""
            const area = document.getElementById('body');
            area.value = 'Shopping\\nmilk and eggs\\nbread';
            area.dispatchEvent(new Event('input'));""")
        server.update(note["id"], "Shopping\nmilk and honey\nbread")
        css("#save").click()
        wait(driver, lambda d: css("#editor-notice").is_displayed(), message=f"overlap notice ({page_state()})")
        saved = server.note(note["id"])["body"]
        self.assertIn("milk and honey", saved)  # both sides' text, none lost
        self.assertIn("milk and eggs", saved)
        self.assertEqual(body_text(), saved)
        self.assertEqual(css("#save-state").text, "Saved")
        self.assertIn("same place", css("#editor-notice-text").text)
        self.assertEqual(css("#editor-notice").get_attribute("data-kind"), "info")
        self.assertFalse(css("#conflict-dialog").is_displayed())
        # The first overlap is selected in the text, for the user to tidy up.
        selected = driver.execute_script("const a = document.getElementById('body'); return a.value.slice(a.selectionStart, a.selectionEnd)")
        self.assertIn("milk and honey", selected)
        self.assertIn("milk and eggs", selected)
        self.assertEqual(driver.switch_to.active_element, css("#body"))
        css("#editor-notice-actions button:last-child").click()  # Dismiss
        wait(driver, lambda d: not css("#editor-notice").is_displayed())

    def test_text_typed_during_a_merged_save_stays_where_it_was_typed(self):
        open_app("/")
        results = driver.execute_script("""return import('/assets/merge.js').then(({ rebase, moveOffset }) => [
            rebase('a\\nb\\nc', 'a\\nb\\nc!', 'A\\nb\\nc'),
            rebase('a\\nb\\nc', 'a!\\nb\\nc', 'a\\nb\\nC'),
            rebase('a\\nb\\nc', 'a\\nb!\\nc', 'a\\nbb\\nc'),
            rebase('a\\nb\\nc', 'a\\nX\\nc', 'a\\nY\\nc'),
            rebase('same', 'same', 'merged'),
            moveOffset(9, 'aaa\\nbbb\\nccc\\nddd', 'aaaX\\nbbb\\nccc\\ndddY'),
            moveOffset(2, 'abcdef', 'abcdef and more'),
            moveOffset(4, 'abcdef', 'more abcdef')])""")
        self.assertEqual(results, ["A\nb\nc!", "a!\nb\nC", "a\nb!b\nc", None, "merged", 10, 2, 9])


class History(BrowserTest):
    def revisions(self):
        return driver.execute_script("return [...document.querySelectorAll('#revision-list .revision')].map((e) => e.textContent)")

    def test_history_lists_shows_and_restores_a_version(self):
        note = server.create("Poem\nfirst draft")
        server.update(note["id"], "Poem\nsecond draft")
        server.update(note["id"], "Poem\nthird draft")
        open_app(f"/#/notes/{note['id']}", autosave=False)
        wait(driver, lambda d: body_text() == "Poem\nthird draft")
        css("#history").click()
        dialog = css("#history-dialog")
        wait(driver, lambda d: dialog.is_displayed() and len(self.revisions()) == 3, message="the versions")
        self.assertEqual(css("#history-title").text, "History of “Poem”")
        names = [text.split(" · ")[0] for text in self.revisions()]
        self.assertTrue(self.revisions()[0].startswith("Version 3 (current)"), names)
        self.assertTrue(self.revisions()[2].startswith("Version 1"), names)
        # The newest is shown first; it is the note's text, so there is nothing to restore.
        wait(driver, lambda d: css("#revision-body").text == "Poem\nthird draft")
        self.assertFalse(css("#history-restore").is_enabled())
        # The keyboard moves through the versions, showing each.
        self.assertEqual(driver.switch_to.active_element.get_attribute("data-version"), "3")
        driver.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
        wait(driver, lambda d: css("#revision-body").text == "Poem\nsecond draft", message="version 2 shown")
        self.assertEqual(css('.revision[data-version="2"]').get_attribute("aria-pressed"), "true")
        self.assertIn("Version 2", css("#revision-label").text)
        css('.revision[data-version="1"]').click()
        wait(driver, lambda d: css("#revision-body").text == "Poem\nfirst draft" and css("#history-restore").is_enabled())
        css("#history-restore").click()
        wait(driver, lambda d: not dialog.is_displayed(), message="closed after restoring")
        wait(driver, lambda d: body_text() == "Poem\nfirst draft", message="the restored text in the editor")
        restored = server.note(note["id"])
        self.assertEqual((restored["body"], restored["version"]), ("Poem\nfirst draft", 4))
        self.assertEqual(css("#save-state").text, "Saved")
        self.assertIn("Version 1 restored", css("#toast-text").text)
        # The version it replaced stays in the history.
        css("#history").click()
        wait(driver, lambda d: len(self.revisions()) == 4, message="four versions")
        self.assertTrue(self.revisions()[1].startswith("Version 3"))
        driver.switch_to.active_element.send_keys(Keys.ESCAPE)
        wait(driver, lambda d: not dialog.is_displayed())
        self.assertEqual(driver.switch_to.active_element, css("#history"))

    def test_unsaved_text_is_saved_before_the_history_opens(self):
        note = server.create("Draft")
        open_app(f"/#/notes/{note['id']}", autosave=False)
        wait(driver, lambda d: body_text() == "Draft")
        css("#body").send_keys(" two")
        css("#history").click()
        wait(driver, lambda d: len(self.revisions()) == 2, message="the new version listed")
        self.assertEqual(server.note(note["id"])["body"], "Draft two")
        driver.switch_to.active_element.send_keys(Keys.ESCAPE)

    def test_paging_through_many_versions(self):
        note = server.create("Counter 0")
        for number in range(1, 55):
            server.update(note["id"], f"Counter {number}")
        open_app(f"/#/notes/{note['id']}", autosave=False)
        wait(driver, lambda d: body_text() == "Counter 54")
        css("#history").click()
        wait(driver, lambda d: len(self.revisions()) == 50, message="a first page")
        css("#revisions-more").click()
        wait(driver, lambda d: len(self.revisions()) == 55, message="all versions")
        self.assertFalse(css("#revisions-more").is_displayed())
        driver.switch_to.active_element.send_keys(Keys.ESCAPE)

    def test_new_notes_have_no_history_button(self):
        open_app("/#/new", autosave=False)
        self.assertFalse(css("#history").is_displayed())


class Trash(BrowserTest):
    """Recently Deleted: needs the server's trash (issue 32 item 3); skipped until it has one."""

    def setUp(self):
        needs_trash(self)

    def trashed(self):
        return driver.execute_script("return [...document.querySelectorAll('#trash-list li')].map((e) => e.dataset.id)")

    def delete_in_app(self, note):
        open_app(f"/#/notes/{note['id']}")
        wait(driver, lambda d: body_text() == note["body"])
        css("#delete").click()
        css('#confirm-actions [data-value="delete"]').click()
        wait(driver, lambda d: not all_css(f'.note-link[data-id="{note["id"]}"]'), message="removed from the list")

    def test_recently_deleted_restores_and_deletes_forever(self):
        keep = server.create("Keep me\nafter all")
        drop = server.create("Drop me")
        self.delete_in_app(drop)
        self.delete_in_app(keep)
        server.create("Written after Keep me was deleted")
        css("#trash-link").click()
        wait(driver, lambda d: self.trashed()[:2] == [keep["id"], drop["id"]], message="latest deletion first")
        self.assertTrue(driver.current_url.endswith("#/trash"))
        row = css(f'#trash-list li[data-id="{keep["id"]}"]')
        self.assertIn("Keep me", row.text)
        self.assertIn("Deleted ", row.text)
        css(f'button[aria-label="Restore “Keep me”"]', row).click()
        wait(driver, lambda d: keep["id"] not in self.trashed(), message="left the trash")
        wait(driver, lambda d: all_css(f'.note-link[data-id="{keep["id"]}"]'), message="back in the list")
        self.assertEqual(titles()[0], "Keep me")  # restored: a change, so it comes first
        self.assertEqual(server.note(keep["id"])["body"], "Keep me\nafter all")
        css("#toast-action").click()  # Open
        wait(driver, lambda d: body_text() == "Keep me\nafter all")
        driver.get(server.url + "/#/trash")
        wait(driver, lambda d: drop["id"] in self.trashed(), message="listed")
        css(f'#trash-list li[data-id="{drop["id"]}"] button[aria-label="Delete “Drop me” forever"]').click()
        self.assertIn("can't be undone", css("#confirm-text").text)
        css('#confirm-actions [data-value="delete"]').click()
        wait(driver, lambda d: drop["id"] not in self.trashed(), message="gone from the trash")
        trash = server.request("GET", "/notes/trash?limit=1000")[2]["notes"]
        self.assertNotIn(drop["id"], [n["id"] for n in trash])
        self.assertEqual(server.request("POST", f"/notes/{drop['id']}/restore", {})[0], 404)

    def test_deleted_notes_are_listed_a_page_at_a_time(self):
        """50 a page; "Load more deleted notes" (the button's own label, back after loading)
        adds the next page to the list."""
        for number in range(51):
            server.delete(server.create(f"Page filler {number}")["id"])
        open_app("/#/trash")
        wait(driver, lambda d: css("#trash-more").is_displayed(), message="a second page offered")
        self.assertEqual(len(self.trashed()), 50)
        self.assertEqual(css("#trash-more").text, "Load more deleted notes")
        css("#trash-more").click()
        wait(driver, lambda d: len(self.trashed()) > 50, message="the second page listed")
        wait(driver, lambda d: css("#trash-list").get_attribute("aria-busy") == "false")
        if css("#trash-more").is_displayed():
            self.assertEqual(css("#trash-more").text, "Load more deleted notes")
        self.assertEqual(len(set(self.trashed())), len(self.trashed()))

    def test_empty_recently_deleted_asks_then_deletes_what_it_listed(self):
        """Recently Deleted had no "Empty": each note had to be deleted forever by itself. It asks
        first (as "Delete forever" does), then deletes every note the trash held when asked, on
        every page; a note deleted while the question is open stays."""
        for number in range(3):
            server.delete(server.create(f"Trashed number {number}")["id"])
        open_app("/#/trash")
        wait(driver, lambda d: len(self.trashed()) >= 3, message="listed")
        total = len(server.request("GET", "/notes/trash?limit=1000")[2]["notes"])
        css("#trash-empty").click()
        wait(driver, lambda d: css("#confirm-dialog").is_displayed(), message="asked")
        self.assertEqual(css("#confirm-title").text, "Empty Recently Deleted?")
        self.assertIn(f"All {total} notes in Recently Deleted", css("#confirm-text").text)
        self.assertIn("can't be undone", css("#confirm-text").text)
        all_css("#confirm-actions button")[0].click()  # Cancel: nothing happens
        self.assertEqual(len(server.request("GET", "/notes/trash?limit=1000")[2]["notes"]), total)
        css("#trash-empty").click()
        wait(driver, lambda d: css("#confirm-dialog").is_displayed(), message="asked again")
        later = server.create("Deleted while the question is open")
        server.delete(later["id"])
        css('#confirm-actions [data-value="empty"]').click()
        wait_until(lambda: [n["id"] for n in server.request("GET", "/notes/trash?limit=1000")[2]["notes"]] == [later["id"]],
                   message="emptied, but for the note deleted meanwhile")
        wait(driver, lambda d: self.trashed() == [later["id"]], message=f"the view shows it ({self.trashed()})")
        self.assertEqual(server.request("POST", f"/notes/{later['id']}/restore", {})[0], 200)
        wait(driver, lambda d: self.trashed() == [] and not css("#trash-empty").is_displayed(), message="nothing to empty")

    def test_empty_recently_deleted_keeps_a_note_restored_and_deleted_again_meanwhile(self):
        """"Empty Recently Deleted" deleted each note it listed by id alone: one restored and
        deleted again meanwhile (on another device: a later version, maybe another text) went
        too. Each goes only at the version listed (If-Match); that one stays, and the page says so."""
        gone = server.create("Trashed for good")
        again = server.create("Restored elsewhere")
        for note in (gone, again):
            server.delete(note["id"])
        open_app("/#/trash")
        wait(driver, lambda d: {gone["id"], again["id"]} <= set(self.trashed()), message="listed")
        css("#trash-empty").click()
        wait(driver, lambda d: css("#confirm-dialog").is_displayed(), message="asked")
        # Another device brings it back, edits it and deletes it again while the question is open.
        self.assertEqual(server.request("POST", f"/notes/{again['id']}/restore", {})[0], 200)
        self.assertEqual(server.request("PUT", f"/notes/{again['id']}", {"body": "Restored elsewhere\nand kept"})[0], 200)
        server.delete(again["id"])
        css('#confirm-actions [data-value="empty"]').click()
        wait(driver, lambda d: css("#toast").is_displayed() and "restored and deleted again" in css("#toast-text").text,
             message="says one was kept")
        self.assertIn("“Restored elsewhere” was restored", css("#toast-text").text)
        trash = [n["id"] for n in server.request("GET", "/notes/trash?limit=1000")[2]["notes"]]
        self.assertEqual(trash, [again["id"]], "only the note changed since it was listed stays")
        wait(driver, lambda d: self.trashed() == [again["id"]], message=f"the view shows it ({self.trashed()})")

    def test_deleted_elsewhere_joins_the_open_view(self):
        note = server.create("Deleted by the API")
        open_app("/#/trash")
        wait(driver, lambda d: css("#trash-list").get_attribute("aria-busy") == "false")
        server.delete(note["id"])
        wait(driver, lambda d: note["id"] in self.trashed(), message="live")
        server.create("Written while it was deleted")
        server.request("POST", f"/notes/{note['id']}/restore", {})
        wait(driver, lambda d: note["id"] not in self.trashed(), message="restored elsewhere")
        wait(driver, lambda d: titles()[0] == "Deleted by the API", message="restored first in the list")

    def test_an_edit_to_a_note_in_the_trash_keeps_the_text(self):
        note = server.create("Trashed while edited")
        open_app(f"/#/notes/{note['id']}", autosave=False)
        wait(driver, lambda d: body_text() == "Trashed while edited")
        css("#body").send_keys(", still typing")
        server.delete(note["id"])
        wait(driver, lambda d: "deleted elsewhere" in css("#editor-notice-text").text)
        self.assertEqual(body_text(), "Trashed while edited, still typing")
        # Restore it: the note comes back from the trash with the text saved into it.
        next(b for b in all_css("#editor-notice-actions button") if b.text == "Restore it").click()
        wait_until(lambda: (server.note(note["id"]) or {}).get("body") == "Trashed while edited, still typing",
                   message=f"restored and saved ({page_state()})")
        wait(driver, lambda d: css("#save-state").text == "Saved" and not css("#editor-notice").is_displayed())
        wait(driver, lambda d: all_css(f'.note-link[data-id="{note["id"]}"]'), message="listed again")

    def test_recently_deleted_at_320_px(self):
        server.delete(server.create("A deleted note with a title long enough to wrap on a narrow phone")["id"])
        try:
            Phone.at_width(self, 320)
            open_app("/#/trash")
            wait(driver, lambda d: self.trashed(), message="listed")
            Phone.fits(self, driver, 320, "trash")
        finally:
            driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})


class Attachments(BrowserTest):
    def files(self, *specs):
        """Writes (name, size or text) files into a temporary folder; returns their paths."""
        folder = tempfile.mkdtemp(prefix="jotter-files-")
        self.addCleanup(shutil.rmtree, folder, ignore_errors=True)
        paths = []
        for name, content in specs:
            path = os.path.join(folder, name)
            with open(path, "wb") as file:
                file.write(content.encode() if isinstance(content, str) else os.urandom(content))
            paths.append(path)
        return paths

    def attachment_names(self):
        return driver.execute_script(
            "return [...document.querySelectorAll('#attachment-list .file-name')].map((e) => e.textContent)")

    def test_upload_resumes_after_the_network_drops(self):
        note = server.create("Flaky link")
        open_app(f"/#/notes/{note['id']}")
        wait(driver, lambda d: body_text() == "Flaky link")
        (big,) = self.files(("long.bin", 10 * 1024 * 1024))
        with open(big, "rb") as file:
            expected = hashlib.sha256(file.read()).hexdigest()
        driver.set_network_conditions(offline=False, latency=0, download_throughput=-1, upload_throughput=4 * 1024 * 1024)
        try:
            css("#file-input").send_keys(big)
            wait(driver, lambda d: d.execute_script("""
                const bar = document.querySelector('#upload-list progress[aria-label="Uploading long.bin"]');
                return bar && bar.value > 10 ? bar.value : null;"""), message="part of it sent")
            # The network drops for two seconds, then comes back: the upload goes on by itself.
            driver.set_network_conditions(offline=True, latency=0, download_throughput=0, upload_throughput=0)
            time.sleep(2)
            driver.set_network_conditions(offline=False, latency=0, download_throughput=-1, upload_throughput=8 * 1024 * 1024)
            wait(driver, lambda d: self.attachment_names() == ["long.bin"], timeout=60, message="attached after the drop")
        finally:
            driver.delete_network_conditions()
        saved = server.note(note["id"])
        self.assertEqual(saved["attachments"][0]["size"], 10 * 1024 * 1024)
        self.assertEqual(saved["attachments"][0]["sha256"], expected)

    def test_an_upload_the_server_stops_answering_is_given_up_and_resumed(self):
        """A resumable upload's request the server never answers (its process stopped: the
        connection stays open and silent) is given up after the request timeout with no byte
        moving, as if the network had dropped: the page asks how far the server got and goes on
        once it answers. (It waited on that request for good: "in progress" for ever.)"""
        note = server.create("Hung upload")
        open_app(f"/#/notes/{note['id']}")
        wait(driver, lambda d: body_text() == "Hung upload")
        (big,) = self.files(("hung.bin", 10 * 1024 * 1024))
        with open(big, "rb") as file:
            expected = hashlib.sha256(file.read()).hexdigest()
        driver.execute_script("""
            document.body.dataset.requestTimeout = '3000';
            window.__sent = [];
            const open = XMLHttpRequest.prototype.open;
            XMLHttpRequest.prototype.open = function (method, ...rest) {
              window.__sent.push(method);
              return open.call(this, method, ...rest);
            };""")
        driver.set_network_conditions(offline=False, latency=0, download_throughput=-1, upload_throughput=4 * 1024 * 1024)
        try:
            css("#file-input").send_keys(big)
            wait(driver, lambda d: d.execute_script("""
                const bar = document.querySelector('#upload-list progress[aria-label="Uploading hung.bin"]');
                return bar && bar.value > 10 ? bar.value : null;"""), message="part of it sent")
            server.process.send_signal(signal.SIGSTOP)
            try:
                wait(driver, lambda d: "HEAD" in d.execute_script("return window.__sent"), timeout=15,
                     message="the stalled request given up, and the server asked how far it got")
            finally:
                server.process.send_signal(signal.SIGCONT)
            wait(driver, lambda d: self.attachment_names() == ["hung.bin"], timeout=60, message="attached once it answers")
        finally:
            driver.delete_network_conditions()
        saved = server.note(note["id"])
        self.assertEqual(saved["attachments"][0]["size"], 10 * 1024 * 1024)
        self.assertEqual(saved["attachments"][0]["sha256"], expected)

    def test_upload_several_files_with_progress_then_download_and_delete(self):
        note = server.create("Trip photos")
        open_app(f"/#/notes/{note['id']}")
        wait(driver, lambda d: body_text() == "Trip photos")
        big, small = self.files(("big.bin", 3 * 1024 * 1024), ("notes.txt", "plain words"))
        # Slow uploads down so the progress bar is seen between empty and full.
        driver.set_network_conditions(offline=False, latency=0, download_throughput=-1, upload_throughput=2 * 1024 * 1024)
        try:
            css("#file-input").send_keys(f"{big}\n{small}")
            partial = wait(driver, lambda d: d.execute_script("""
                const bar = document.querySelector('#upload-list progress[aria-label="Uploading big.bin"]');
                return bar && bar.value > 0 && bar.value < 100 ? bar.value : null;"""), message="progress between 0 and 100")
            self.assertTrue(0 < partial < 100)
            self.assertIn("% of 3.0 MiB", css('#upload-list li:has(progress[aria-label="Uploading big.bin"]) .upload-status').text)
            wait(driver, lambda d: sorted(self.attachment_names()) == ["big.bin", "notes.txt"], timeout=20, message="both attached")
        finally:
            driver.delete_network_conditions()
        wait(driver, lambda d: not all_css("#upload-list li"), message="upload rows cleared")
        saved = server.note(note["id"])
        self.assertEqual(sorted(a["filename"] for a in saved["attachments"]), ["big.bin", "notes.txt"])
        self.assertEqual(next(a["size"] for a in saved["attachments"] if a["filename"] == "big.bin"), 3 * 1024 * 1024)
        self.assertIn("2 attachments", css("#editor-meta").text)
        wait(driver, lambda d: css(".note-files", link(note["id"])).text == "2 files")
        # Download: a link to the content with the file's name.
        text_link = next(a for a in all_css("#attachment-list a.file-name") if a.text == "notes.txt")
        self.assertEqual(text_link.get_attribute("download"), "notes.txt")
        self.assertEqual(driver.execute_script("return fetch(arguments[0]).then((r) => r.text())", text_link.get_attribute("href")),
                         "plain words")
        # Delete one, after confirming.
        css('#attachment-list button[aria-label="Delete big.bin"]').click()
        css('#confirm-actions [data-value="delete"]').click()
        wait(driver, lambda d: self.attachment_names() == ["notes.txt"], message="attachment deleted")
        self.assertEqual([a["filename"] for a in server.note(note["id"])["attachments"]], ["notes.txt"])
        # Attaching changed the note's version; saving text afterwards is not a conflict.
        css("#body").send_keys(" from Lisbon")
        save()
        self.assertEqual(server.note(note["id"])["body"], "Trip photos from Lisbon")

    def test_drop_files_on_a_new_note_saves_it_first(self):
        open_app("/#/new")
        css("#body").send_keys("Dropped files")
        driver.execute_script("""
            const files = new DataTransfer();
            files.items.add(new File(['first'], 'one.txt', { type: 'text/plain' }));
            files.items.add(new File(['second'], 'two.txt', { type: 'text/plain' }));
            const target = document.getElementById('body');
            for (const type of ['dragenter', 'dragover', 'drop']) {
              target.dispatchEvent(new DragEvent(type, { dataTransfer: files, bubbles: true, cancelable: true }));
            }""")
        wait(driver, lambda d: sorted(self.attachment_names()) == ["one.txt", "two.txt"], message="dropped files attached")
        note = next(n for n in server.notes() if n["body"] == "Dropped files")
        self.assertEqual(len(note["attachments"]), 2)
        self.assertTrue(driver.current_url.endswith(f"#/notes/{note['id']}"))

    def test_attachments_added_elsewhere_appear(self):
        note = server.create("Shared")
        open_app(f"/#/notes/{note['id']}", autosave=False)
        wait(driver, lambda d: body_text() == "Shared")
        css("#body").send_keys(" notes")  # unsaved text while a file is attached elsewhere
        boundary = "jotterboundary"
        payload = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"note_id\"\r\n\r\n{note['id']}\r\n"
                   f"--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"from-curl.txt\"\r\n"
                   f"Content-Type: text/plain\r\n\r\nhello\r\n--{boundary}--\r\n").encode()
        request = urllib.request.Request(server.url + "/uploads", data=payload, method="POST",
                                         headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
        with urllib.request.urlopen(request, timeout=10, context=server.context) as response:
            self.assertEqual(response.status, 201)
        wait(driver, lambda d: self.attachment_names() == ["from-curl.txt"], message="live attachment")
        self.assertEqual(body_text(), "Shared notes")
        save()  # only the attachments changed elsewhere: no conflict to settle
        self.assertFalse(css("#conflict-dialog").is_displayed())
        self.assertEqual(server.note(note["id"])["body"], "Shared notes")


class Files(BrowserTest):
    def upload(self, name, content, note_id=None):
        boundary = "jotterboundary"
        field = f"--{boundary}\r\nContent-Disposition: form-data; name=\"note_id\"\r\n\r\n{note_id}\r\n" if note_id else ""
        payload = (f"{field}--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\n"
                   f"Content-Type: text/plain\r\n\r\n{content}\r\n--{boundary}--\r\n").encode()
        request = urllib.request.Request(server.url + "/uploads", data=payload, method="POST",
                                         headers={"Content-Type": f"multipart/form-data; boundary={boundary}"})
        with urllib.request.urlopen(request, timeout=10, context=server.context) as response:
            return json.loads(response.read())["uploads"][0]

    def names(self):
        return driver.execute_script("return [...document.querySelectorAll('#files-list .file-name')].map((e) => e.textContent)")

    def test_files_in_no_note_can_be_attached_or_deleted(self):
        note = server.create("Holiday plans")
        self.upload("attached.txt", "in a note", note_id=note["id"])
        loose = self.upload("loose.txt", "Grüße aus Köln")
        doomed = self.upload("doomed.txt", "delete me")
        open_app()
        css("#files-link").click()
        wait(driver, lambda d: sorted(self.names()) == ["doomed.txt", "loose.txt"], message="files in no note")
        self.assertTrue(driver.current_url.endswith("#/files"))
        row = css(f'#files-list li[data-id="{loose["id"]}"]')
        self.assertIn("text/plain; charset=utf-8", row.text)
        # Attach one to a note: it leaves this view and shows in the note.
        Select(css("select", row)).select_by_visible_text("Holiday plans")
        css('button[aria-label="Attach loose.txt"]', row).click()
        wait(driver, lambda d: self.names() == ["doomed.txt"], message="attached file left the view")
        self.assertEqual(server.request("GET", f"/uploads/{loose['id']}")[2]["upload"]["note_id"], note["id"])
        wait(driver, lambda d: css(".note-files", link(note["id"])).text == "2 files", message="the note shows it")
        # Delete the other, after confirming.
        css(f'#files-list li[data-id="{doomed["id"]}"] button[aria-label="Delete doomed.txt"]').click()
        css('#confirm-actions [data-value="delete"]').click()
        wait(driver, lambda d: self.names() == [], message="deleted")
        self.assertEqual(server.request("GET", f"/uploads/{doomed['id']}")[0], 404)
        self.assertIn("Every file is attached to a note", css("#files-message").text)


class Safety(BrowserTest):
    XSS = '<script>window.__xss = 1</script><img src=x onerror="window.__xss = 2">'

    def test_markup_in_a_note_is_text(self):
        note = server.create(self.XSS)
        open_app()
        wait(driver, lambda d: self.XSS in titles())
        open_app(f"/#/notes/{note['id']}")
        wait(driver, lambda d: body_text() == self.XSS)
        self.assertEqual(css("#editor-title").text, self.XSS)
        self.assertEqual(all_css("main img[src='x'], #notes img, #notes script"), [])
        self.assertIsNone(driver.execute_script("return window.__xss"))


class Keyboard(BrowserTest):
    def test_shortcuts_and_focus(self):
        open_app()
        css("body").send_keys("n")
        wait(driver, lambda d: d.switch_to.active_element == css("#body"))
        driver.switch_to.active_element.send_keys("Typed with the keyboard")
        driver.switch_to.active_element.send_keys(Keys.CONTROL, "s")
        wait(driver, lambda d: css("#save-state").text == "Saved")
        note = next(n for n in server.notes() if n["body"] == "Typed with the keyboard")
        driver.switch_to.active_element.send_keys(Keys.ESCAPE)
        wait(driver, lambda d: d.switch_to.active_element.get_attribute("data-id") == note["id"], message="focus back on the note")
        self.assertIsNotNone(css("#editor").get_attribute("hidden"))
        driver.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
        below = driver.execute_script("return document.querySelectorAll('.note-link')[1].dataset.id")
        self.assertEqual(driver.switch_to.active_element.get_attribute("data-id"), below)
        driver.switch_to.active_element.send_keys("/")
        self.assertEqual(driver.switch_to.active_element, css("#search"))

    def test_every_control_has_a_label(self):
        open_app("/#/new")
        unlabeled = driver.execute_script("""
            return [...document.querySelectorAll('input, textarea, button, select, a[href]')]
              .filter((e) => !(e.labels?.length || e.getAttribute('aria-label') || e.textContent.trim()))
              .map((e) => e.outerHTML.slice(0, 80));""")
        self.assertEqual(unlabeled, [])


class Phone(BrowserTest):
    SCREENSHOTS = os.environ.get("JOTTER_BROWSER_SCREENSHOTS") or os.path.join(ROOT, ".build", "browser-screenshots")

    def at_width(self, width, browser=None):
        """The page as a phone `width` CSS pixels wide shows it (the viewport itself, not the window)."""
        (browser or driver).execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                                            {"width": width, "height": 760, "deviceScaleFactor": 2, "mobile": True})

    def fits(self, browser, width, label):
        """Nothing scrolls sideways and "New note" is whole on screen; a screenshot for people to look at."""
        wait(browser, lambda d: d.execute_script("return document.documentElement.clientWidth") == width, message=f"{width} px wide")
        sizes = browser.execute_script("""const button = document.getElementById('new-note').getBoundingClientRect();
            return {scroll: document.documentElement.scrollWidth, body: document.body.scrollWidth,
                    view: document.documentElement.clientWidth, left: button.left, right: button.right,
                    shown: getComputedStyle(document.getElementById('new-note')).visibility === 'visible' && button.width > 0}""")
        self.assertLessEqual(sizes["scroll"], width, f"{label}: the page scrolls sideways at {width} px: {sizes}")
        self.assertLessEqual(sizes["body"], width, f"{label}: {sizes}")
        self.assertTrue(sizes["shown"] and sizes["left"] >= 0 and sizes["right"] <= width, f"{label}: New note is cut off at {width} px: {sizes}")
        os.makedirs(Phone.SCREENSHOTS, exist_ok=True)
        browser.save_screenshot(os.path.join(Phone.SCREENSHOTS, f"{label}-{width}.png"))

    def test_narrow_phones_never_scroll_sideways_and_keep_new_note(self):
        """320, 360, 375 and 390 px wide: no sideways scroll, "New note" whole; no "Sign in" while nobody can."""
        server.create("A note with a title long enough to wrap on a narrow phone screen, and then some more words")
        try:
            for width in [320, 360, 375, 390]:
                self.at_width(width)
                open_app()
                self.assertFalse(css("#sign-in-button").is_displayed(), "--auth off with no user: nobody can sign in")
                self.fits(driver, width, "list")
                css("#new-note").click()
                wait(driver, lambda d: css("#main").is_displayed())
                self.fits(driver, width, "new-note")
        finally:
            driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

    def test_history_at_320_px(self):
        """The history dialog fits a narrow phone: versions above the text, Restore on screen."""
        note = server.create("Phone history\nfirst")
        server.update(note["id"], "Phone history\nsecond")
        try:
            self.at_width(320)
            open_app(f"/#/notes/{note['id']}", autosave=False)
            wait(driver, lambda d: body_text() == "Phone history\nsecond")
            self.fits(driver, 320, "editor")
            css("#history").click()
            wait(driver, lambda d: len(all_css("#revision-list .revision")) == 2, message="the versions")
            sizes = driver.execute_script("""const box = (id) => document.getElementById(id).getBoundingClientRect();
                return {scroll: document.documentElement.scrollWidth, left: box('history-dialog').left,
                        right: box('history-dialog').right, restore: box('history-restore').right,
                        text: box('revision-body').width}""")
            self.assertTrue(sizes["scroll"] <= 320 and sizes["left"] >= 0 and sizes["right"] <= 320 and sizes["restore"] <= 320, sizes)
            self.assertGreater(sizes["text"], 200, sizes)
            os.makedirs(Phone.SCREENSHOTS, exist_ok=True)
            driver.save_screenshot(os.path.join(Phone.SCREENSHOTS, "history-320.png"))
            driver.switch_to.active_element.send_keys(Keys.ESCAPE)
        finally:
            driver.execute_cdp_cmd("Emulation.clearDeviceMetricsOverride", {})

    def test_list_then_editor_at_phone_width(self):
        note = server.create("On the phone\nsmall screen")
        driver.set_window_size(390, 844)
        try:
            open_app()
            self.assertTrue(css(".sidebar").is_displayed())
            self.assertFalse(css("#main").is_displayed())
            link(note["id"]).click()
            wait(driver, lambda d: css("#main").is_displayed() and not css(".sidebar").is_displayed())
            self.assertTrue(css("#back").is_displayed())
            width = driver.execute_script("return document.documentElement.scrollWidth")
            self.assertLessEqual(width, 390)  # nothing wider than the screen
            css("#back").click()
            wait(driver, lambda d: css(".sidebar").is_displayed())
        finally:
            driver.set_window_size(1280, 800)

    def test_new_note_at_phone_width_types_into_the_note(self):
        driver.set_window_size(390, 844)
        try:
            open_app(autosave=False)
            css("#new-note").click()
            wait(driver, lambda d: css("#main").is_displayed())
            self.assertEqual(driver.switch_to.active_element, css("#body"))
            # Typed keys go to the text, never to the page's shortcuts (N is "new note").
            driver.switch_to.active_element.send_keys("Phone note, nice")
            self.assertEqual(body_text(), "Phone note, nice")
            save()
            self.assertTrue(any(n["body"] == "Phone note, nice" for n in server.notes()))
        finally:
            driver.set_window_size(1280, 800)


class Restart(BrowserTest):
    def test_reconnects_after_the_server_restarts(self):
        note = server.create("Written before the restart")
        open_app(f"/#/notes/{note['id']}", autosave=False)
        wait(driver, lambda d: body_text() == "Written before the restart")
        server.stop()
        wait(driver, lambda d: css("#connection").get_attribute("data-state") == "reconnecting", message="reconnecting")
        self.assertEqual(css("#connection-text").text, "Reconnecting…")
        # Saving while the server is away keeps the text on this device, and says it waits.
        css("#body").send_keys(", saved after it")
        css("#save").click()
        wait(driver, lambda d: css("#save-state").text == "Saved on this device", message=f"kept ({page_state()})")
        wait(driver, lambda d: css("#connection-text").text == "Offline · 1 change waiting", message="waiting")
        server.start()
        wait(driver, lambda d: css("#connection-text").text == "Synced", timeout=20, message=f"synced ({page_state()})")
        self.assertEqual(css("#connection").get_attribute("data-state"), "live")
        self.assertEqual(css("#save-state").text, "Saved")
        self.assertEqual(server.note(note["id"])["body"], "Written before the restart, saved after it")
        server.create("After the restart")
        wait(driver, lambda d: "After the restart" in titles(), message="live after restart")

    def test_a_hung_server_is_noticed_by_its_missing_heartbeats(self):
        """A server that stops answering (its process stopped: the connection stays open and
        silent) sends no more heartbeats: after a few missed ones the header says
        "Reconnecting…", not "Live", and the page connects again once the server answers. (The
        heartbeats, `:` comments, were not watched: "Live" for ever.)"""
        open_app()
        # The server's heartbeat comes every 15 s: a stream silent for 20 s counts as lost here.
        driver.execute_script("document.body.dataset.streamTimeout = '20000'")
        time.sleep(25)
        self.assertEqual(css("#connection").get_attribute("data-state"), "live", "the heartbeats keep it live")
        server.process.send_signal(signal.SIGSTOP)
        try:
            wait(driver, lambda d: css("#connection").get_attribute("data-state") == "reconnecting", timeout=35,
                 message=f"reconnecting ({css('#connection-text').text})")
            self.assertEqual(css("#connection-text").text, "Reconnecting…")
        finally:
            server.process.send_signal(signal.SIGCONT)
        wait(driver, lambda d: css("#connection").get_attribute("data-state") == "live", timeout=30, message="live again")
        note = server.create("After the hang")
        wait(driver, lambda d: "After the hang" in titles(), message="live after the hang")
        server.delete(note["id"])

    def test_autosave_goes_through_once_the_server_is_back(self):
        note = server.create("Autosaved across a restart")
        open_app(f"/#/notes/{note['id']}")
        wait(driver, lambda d: body_text() == "Autosaved across a restart")
        server.stop()
        wait(driver, lambda d: css("#connection").get_attribute("data-state") == "reconnecting", message="reconnecting")
        css("#body").send_keys(", typed while it was away")
        wait(driver, lambda d: css("#save-state").text == "Saved on this device", timeout=15, message=f"autosave kept ({page_state()})")
        server.start()
        # No keystroke, no click: the text reaches the server by itself.
        wait_until(lambda: (server.note(note["id"]) or {}).get("body") == "Autosaved across a restart, typed while it was away",
                   timeout=30, message=f"autosaved after the restart ({page_state()})")
        wait(driver, lambda d: css("#save-state").text == "Saved", message="says saved")


    def test_with_the_server_away_search_trash_and_files_say_so(self):
        """Views the server must answer say that it can't, not something false: a search is not
        every note, an unread trash is not "No recently deleted notes"."""
        server.create("Listed before the server went away")
        open_app()
        server.stop()
        try:
            wait(driver, lambda d: css("#connection").get_attribute("data-state") == "reconnecting", message="reconnecting")
            css("#search").send_keys("zzzz")
            wait(driver, lambda d: "Couldn't load notes" in css("#list-message").text, message=f"search failed ({page_state()})")
            self.assertEqual(titles(), [])
            if TRASH:
                driver.execute_script("location.hash = '#/trash'")
                wait(driver, lambda d: css("#trash-message").text.startswith("Couldn't list the deleted notes"),
                     message=f"trash: {css('#trash-message').text!r}")
            driver.execute_script("location.hash = '#/files'")
            wait(driver, lambda d: css("#files-message").text.startswith("Couldn't list the files"),
                 message=f"files: {css('#files-message').text!r}")
        finally:
            server.start()

class SlowLink(BrowserTest):
    """What a trial on a slow link (1.5 s a request) found: "New note" while a new note's first
    save is on its way never writes over the note it creates."""

    def test_new_note_while_the_first_save_is_on_its_way_keeps_both_notes(self):
        before = {note["id"] for note in server.notes()}
        open_app()
        driver.set_network_conditions(offline=False, latency=1500, download_throughput=-1, upload_throughput=-1)
        expected = []
        try:
            # Once with a second note typed, once with nothing typed in it (that emptied the first).
            for index, second in enumerate(["Second note\nalso slow", ""]):
                first = f"First note {index}\nwritten on a slow link"
                css("#new-note").click()
                wait(driver, lambda d: css("#editor-title").text == "New note" and body_text() == "", message="a new note")
                css("#body").send_keys(first)
                wait(driver, lambda d: css("#save-state").text == "Saving…", message=f"first save on its way ({page_state()})")
                css("#new-note").click()
                wait(driver, lambda d: d.execute_script("return location.hash") == "#/new" and body_text() == ""
                     and css("#save-state").get_attribute("data-state") != "busy", timeout=15, message=f"new note ({page_state()})")
                expected.append(first)
                if second:
                    css("#body").send_keys(second)
                    wait(driver, lambda d: css("#save-state").text == "Saved", timeout=15, message=f"second saved ({page_state()})")
                    expected.append(second)
            wait_until(lambda: sorted(note["body"] for note in server.notes() if note["id"] not in before) == sorted(expected),
                       timeout=20, message=f"both notes kept: {[n['body'] for n in server.notes() if n['id'] not in before]}")
        finally:
            driver.delete_network_conditions()

    def test_a_note_clicked_while_a_new_note_saves_opens_once_it_is_saved(self):
        other = server.create("Clicked while saving")
        open_app()
        driver.set_network_conditions(offline=False, latency=1500, download_throughput=-1, upload_throughput=-1)
        try:
            css("#new-note").click()
            wait(driver, lambda d: css("#editor-title").text == "New note" and body_text() == "", message="a new note")
            css("#body").send_keys("Written before the click")
            wait(driver, lambda d: css("#save-state").text == "Saving…", message=f"first save on its way ({page_state()})")
            # (Found again if the list is drawn anew between finding the link and clicking it.)
            wait(driver, lambda d: link(other["id"]).click() or True, message="clicked")
            # The click is not dropped: once the new note is saved, the clicked one opens.
            wait(driver, lambda d: body_text() == "Clicked while saving", timeout=15, message=f"the clicked note ({page_state()})")
            self.assertEqual(driver.execute_script("return location.hash"), f"#/notes/{other['id']}")
            self.assertIn("Written before the click", [note["body"] for note in server.notes()])
        finally:
            driver.delete_network_conditions()


def kept(what="allNotes", browser=None):
    """This browser's copy (store.js, in IndexedDB): `allNotes` or the `outbox`."""
    return (browser or driver).execute_async_script(
        "const done = arguments[arguments.length - 1];"
        f"import('/assets/store.js').then((store) => store.{what}()).then(done, (error) => done(String(error)));")


def press(*keys):
    driver.switch_to.active_element.send_keys(*keys)


def raw(path):
    """The bytes and headers of `path`, as served."""
    with urllib.request.urlopen(server.url + path, timeout=10, context=server.context) as response:
        return response.read(), response.headers


def png_size(data):
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "a PNG"
    return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big"), data[25]


class Offline(BrowserTest):
    """Issue 33: installable, and offline — the page from the service worker, the notes from
    IndexedDB, edits queued with their base version and key, sent when the server is back."""

    def test_manifest_and_home_screen_tags(self):
        open_app()
        head = driver.execute_script("""const content = (name) => document.querySelector(`meta[name="${name}"]`)?.content;
            return {manifest: document.querySelector('link[rel=manifest]')?.getAttribute('href'),
              touch: document.querySelector('link[rel=apple-touch-icon]')?.getAttribute('href'),
              capable: content('apple-mobile-web-app-capable'), mobile: content('mobile-web-app-capable'),
              status: content('apple-mobile-web-app-status-bar-style'), title: content('apple-mobile-web-app-title'),
              theme: content('theme-color')}""")
        self.assertEqual((head["capable"], head["mobile"], head["title"]), ("yes", "yes", "Jotter"))
        self.assertIn(head["status"], ("default", "black", "black-translucent"))
        data, headers = raw(head["manifest"])
        self.assertEqual(headers["Content-Type"], "application/manifest+json")
        manifest = json.loads(data)
        self.assertEqual((manifest["name"], manifest["display"], manifest["start_url"], manifest["scope"]),
                         ("Jotter", "standalone", "/", "/"))
        self.assertEqual(manifest["theme_color"], head["theme"])
        sizes = set()
        for icon in manifest["icons"]:
            data, headers = raw(icon["src"])
            self.assertEqual(headers["Content-Type"], icon["type"], icon["src"])
            if icon["type"] == "image/png":
                width, height, _ = png_size(data)
                self.assertEqual(f"{width}x{height}", icon["sizes"], icon["src"])
                sizes.add((width, icon.get("purpose", "any")))
        self.assertTrue({(192, "any"), (512, "any"), (512, "maskable")} <= sizes, sizes)
        # iOS puts the touch icon on the home screen as it is: 180 px, opaque (RGB, no alpha).
        data, headers = raw(head["touch"])
        self.assertEqual((headers["Content-Type"], png_size(data)), ("image/png", (180, 180, 2)))
        # Chromium reads the manifest without a complaint, and the service worker controls the page.
        parsed = driver.execute_cdp_cmd("Page.getAppManifest", {})
        self.assertEqual(parsed.get("errors"), [], parsed)
        wait(driver, lambda d: d.execute_script("return navigator.serviceWorker.controller?.scriptURL ?? null"),
             message="service worker in control")

    def test_a_hung_server_does_not_hold_the_page_from_opening(self):
        """A server that stops answering (its process stopped: the connection stays open and
        silent) counts as away when the page is loaded again: the service worker serves its copy
        of the page after a few seconds, and the notes come from IndexedDB, instead of the page
        waiting on the network for good."""
        note = server.create("Hung reload")
        open_app()
        wait(driver, lambda d: d.execute_script("return navigator.serviceWorker.controller !== null"), message="service worker")
        wait(driver, lambda d: note["id"] in {n["id"] for n in kept()}, message="note kept in IndexedDB")
        leave_page()
        server.process.send_signal(signal.SIGSTOP)
        try:
            driver.set_page_load_timeout(25)
            started = time.monotonic()
            driver.get(server.url + "/")
            wait(driver, lambda d: "Hung reload" in titles(), timeout=15, message="notes from IndexedDB")
            # The page (4 s) and then its files at once from the copy, with room for a busy machine.
            self.assertLess(time.monotonic() - started, 15)
        finally:
            driver.set_page_load_timeout(300)
            server.process.send_signal(signal.SIGCONT)
        wait(driver, lambda d: css("#connection").get_attribute("data-state") == "live", timeout=45, message="live again")

    def test_an_offline_edit_merged_with_an_overlap_is_highlighted(self):
        """An edit queued offline is merged when it goes; where both sides changed the same text,
        the answer's `merge.regions` are shown as for a save made online."""
        note = server.create("Shopping\nmilk\nbread")
        open_app(f"/#/notes/{note['id']}", autosave=False)
        wait(driver, lambda d: body_text() == "Shopping\nmilk\nbread")
        go_offline()
        try:
            type_text("Shopping\nmilk and eggs\nbread")
            css("#save").click()
            wait(driver, lambda d: css("#save-state").text == "Saved on this device", message=f"queued ({page_state()})")
            wait(driver, lambda d: css("#connection-text").text == "Offline · 1 change waiting", message="waiting")
            self.assertEqual([(entry["kind"], entry["base"]) for entry in kept("outbox")], [("edit", 1)])
            server.update(note["id"], "Shopping\nmilk and honey\nbread")  # meanwhile, the same line elsewhere
        finally:
            go_online()
        wait(driver, lambda d: css("#editor-notice").is_displayed(), timeout=15, message=f"overlap notice ({page_state()})")
        saved = server.note(note["id"])["body"]
        self.assertIn("milk and honey", saved)
        self.assertIn("milk and eggs", saved)
        self.assertEqual(body_text(), saved)
        self.assertIn("same place", css("#editor-notice-text").text)
        css("#editor-notice-actions button").click()  # Show it
        selected = driver.execute_script("const a = document.getElementById('body'); return a.value.slice(a.selectionStart, a.selectionEnd)")
        self.assertIn("milk and honey", selected)
        self.assertIn("milk and eggs", selected)
        wait(driver, lambda d: css("#connection-text").text == "Synced", timeout=15, message="synced")
        self.assertEqual(css("#save-state").text, "Saved")

    def test_an_edit_refused_429_stays_queued_and_goes_again_when_retry_after_says(self):
        """An edit from the outbox answered `429` (the user's budget of merge work spent) is kept
        and sent again only after its `Retry-After` (not at the next 3 s try), then merged."""
        note = server.create("Budget\nfirst line\nsecond line")
        open_app(f"/#/notes/{note['id']}", autosave=False)
        wait(driver, lambda d: body_text() == "Budget\nfirst line\nsecond line")
        go_offline()
        try:
            type_text("Budget\nfirst line, edited here\nsecond line")
            css("#save").click()
            wait(driver, lambda d: css("#save-state").text == "Saved on this device", message=f"queued ({page_state()})")
            server.update(note["id"], "Budget\nfirst line\nsecond line, edited elsewhere")  # so the edit is merged
            # From now on the page's first PUT (the outbox's) is answered 429 with Retry-After: 6;
            # every PUT's time is kept.
            driver.execute_script("""
                const real = window.fetch;
                let refuse = true;
                window.budgetPuts = [];
                window.fetch = (input, init) => {
                  if (init?.method !== 'PUT') return real(input, init);
                  window.budgetPuts.push(performance.now());
                  if (!refuse) return real(input, init);
                  refuse = false;
                  const problem = { type: '/problems/merge-budget-spent', title: 'Too Many Requests', status: 429,
                    detail: 'the merge work one user may have is spent for now' };
                  return Promise.resolve(new Response(JSON.stringify(problem), {
                    status: 429, headers: { 'Content-Type': 'application/problem+json', 'Retry-After': '6' } }));
                };""")
        finally:
            go_online()
        wait(driver, lambda d: d.execute_script("return window.budgetPuts.length") >= 1, timeout=15, message="sent, refused")
        self.assertEqual([(entry["kind"], entry["base"]) for entry in kept("outbox")], [("edit", 1)])
        wait(driver, lambda d: "edited here" in server.note(note["id"])["body"], timeout=30, message=f"sent again ({page_state()})")
        self.assertEqual(server.note(note["id"])["body"], "Budget\nfirst line, edited here\nsecond line, edited elsewhere")
        puts = driver.execute_script("return window.budgetPuts")
        self.assertEqual(len(puts), 2, puts)
        self.assertGreaterEqual(puts[1] - puts[0], 5900, "not sent again before Retry-After")
        wait(driver, lambda d: css("#connection-text").text == "Synced", timeout=15, message="synced")
        self.assertEqual(kept("outbox"), [])

    def test_edits_made_offline_in_two_tabs_converge_when_the_server_is_back(self):
        first = server.create("Offline one\nfirst line")
        second = server.create("Offline two\nsecond line")
        open_app(autosave=False)
        wait(driver, lambda d: d.execute_script("return navigator.serviceWorker.controller !== null"), message="service worker")
        wait(driver, lambda d: {first["id"], second["id"]} <= {note["id"] for note in kept()}, message="notes kept in IndexedDB")
        tab = driver.current_window_handle
        server.stop()
        # Reloaded with the server gone: the service worker serves the page, IndexedDB the notes.
        leave_page()
        driver.get(server.url + "/")
        wait(driver, lambda d: {"Offline one", "Offline two"} <= set(titles()), message="notes from IndexedDB")
        driver.execute_script("document.body.dataset.autosaveDelay = '3600000'")
        # A second tab has the first note open before this one changes it.
        driver.switch_to.new_window("tab")
        other = driver.current_window_handle
        try:
            driver.get(server.url + f"/#/notes/{first['id']}")
            wait(driver, lambda d: body_text() == "Offline one\nfirst line", message="second tab: the note from IndexedDB")
            driver.execute_script("document.body.dataset.autosaveDelay = '3600000'")
            driver.switch_to.window(tab)

            # This tab, with the keyboard: edit the first note, then the second, then write a new one.
            link(first["id"]).click()
            wait(driver, lambda d: body_text() == "Offline one\nfirst line")
            press(Keys.CONTROL, Keys.HOME)
            press(Keys.END, " edited offline")
            press(Keys.CONTROL, "s")
            wait(driver, lambda d: css("#save-state").text == "Saved on this device", message=f"queued ({page_state()})")
            press(Keys.ESCAPE)
            wait(driver, lambda d: d.switch_to.active_element.get_attribute("data-id") == first["id"], message="back in the list")
            ids = driver.execute_script("return [...document.querySelectorAll('.note-link')].map((e) => e.dataset.id)")
            step = Keys.ARROW_DOWN if ids.index(second["id"]) > ids.index(first["id"]) else Keys.ARROW_UP
            for _ in range(abs(ids.index(second["id"]) - ids.index(first["id"]))):
                press(step)
            press(Keys.ENTER)
            wait(driver, lambda d: body_text() == "Offline two\nsecond line", message="second note open")
            press(Keys.CONTROL, Keys.END)
            press("\nadded offline")
            press(Keys.CONTROL, "s")
            wait(driver, lambda d: css("#save-state").text == "Saved on this device", message=f"queued ({page_state()})")
            press(Keys.ESCAPE)
            wait(driver, lambda d: css("#editor").get_attribute("hidden") is not None, message="list")
            press("n")
            wait(driver, lambda d: d.switch_to.active_element == css("#body"), message="new note")
            press("Written offline\nin a new note")
            press(Keys.CONTROL, "s")
            wait(driver, lambda d: css("#save-state").text == "Saved on this device", message=f"queued ({page_state()})")
            self.assertRegex(driver.current_url, r"#/notes/local-")
            wait(driver, lambda d: css("#connection-text").text == "Offline · 3 changes waiting", message="header")
            self.assertEqual([entry["kind"] for entry in kept("outbox")], ["edit", "edit", "create"])

            # The second tab's edit of the first note, made from the version before this tab's.
            driver.switch_to.window(other)
            press(Keys.CONTROL, Keys.END)
            press("\nfrom the second tab")
            press(Keys.CONTROL, "s")
            wait(driver, lambda d: css("#save-state").text == "Saved on this device", message=f"second tab queued ({page_state()})")
            wait(driver, lambda d: css("#connection-text").text == "Offline · 4 changes waiting", message="second tab's header")
            outbox = kept("outbox")
            # Both edits of the first note name version 1, the one each was made from: the server merges them.
            self.assertEqual([(entry["kind"], entry["note"], entry["base"]) for entry in (outbox[0], outbox[3])],
                             [("edit", first["id"], 1), ("edit", first["id"], 1)])
            self.assertTrue(all(entry["key"] for entry in outbox), "each edit keeps its Idempotency-Key")
            driver.switch_to.window(tab)
            wait(driver, lambda d: css("#connection-text").text == "Offline · 4 changes waiting", message="this tab hears of it")

            server.start()
            merged = "Offline one edited offline\nfirst line\nfrom the second tab"
            wait_until(lambda: (server.note(first["id"]) or {}).get("body") == merged, timeout=30,
                       message=f"merged on the server ({server.note(first['id'])}, {page_state()})")
            self.assertEqual(server.note(second["id"])["body"], "Offline two\nsecond line\nadded offline")
            self.assertEqual([n["body"] for n in server.notes()].count("Written offline\nin a new note"), 1)
            for handle in (tab, other):
                driver.switch_to.window(handle)
                wait(driver, lambda d: css("#connection-text").text == "Synced", timeout=15, message=f"synced ({page_state()})")
                self.assertEqual(kept("outbox"), [])
            # Both tabs show the server's text: the second its open note, this one its copy and the new note's own id.
            driver.switch_to.window(other)
            wait(driver, lambda d: body_text() == merged, message="second tab converged")
            self.assertEqual(css("#save-state").text, "Saved")
            driver.switch_to.window(tab)
            created = next(n for n in server.notes() if n["body"] == "Written offline\nin a new note")
            wait(driver, lambda d: d.current_url.endswith(f"#/notes/{created['id']}"), message="the new note's id")
            link(first["id"]).click()
            wait(driver, lambda d: body_text() == merged, message="this tab converged")
            self.assertEqual({note["id"]: note["body"] for note in kept()}[first["id"]], merged)
        finally:
            if server.process.poll() is not None:
                server.start()
            driver.switch_to.window(other)
            driver.close()
            driver.switch_to.window(tab)


class OfflineSync(BrowserTest):
    """What a trial of the offline sync found: no edit made offline is lost — two queued edits of
    one note keep a change made elsewhere, an edit the server refuses stays with the user, a
    queued delete does not discard a change made elsewhere, and hiding the page saves the text."""


    def queue_two_edits(self, note, first, second, elsewhere):
        """Offline: `first`, autosaved, then `second` 1.5 s later; meanwhile `elsewhere` is saved."""
        open_app(f"/#/notes/{note['id']}")
        wait(driver, lambda d: body_text() == note["body"])
        go_offline()
        try:
            type_text(first)
            wait(driver, lambda d: css("#connection-text").text == "Offline · 1 change waiting", timeout=15,
                 message=f"first edit waiting ({page_state()})")
            time.sleep(1.5)
            type_text(second)
            wait(driver, lambda d: css("#connection-text").text == "Offline · 2 changes waiting", timeout=15,
                 message=f"second edit waiting ({page_state()})")
            outbox = kept("outbox")
            self.assertEqual([(entry["kind"], entry["base"], entry["after"]) for entry in outbox],
                             [("edit", 1, None), ("edit", None, outbox[0]["seq"])])
            server.update(note["id"], elsewhere)  # another client, meanwhile
        finally:
            go_online()

    def test_two_queued_edits_keep_a_change_made_elsewhere(self):
        note = server.create("Plan C\nline A\nline B\nline C")
        self.queue_two_edits(note, "Plan C\nline A\nline B, edited\nline C",
                             "Plan C\nline A\nline B, edited\nline C, edited too", "Plan C, from the CLI\nline A\nline B\nline C")
        expected = "Plan C, from the CLI\nline A\nline B, edited\nline C, edited too"
        wait_until(lambda: kept("outbox") == [] and server.note(note["id"])["body"] == expected, timeout=30,
                   message=f"both edits merged ({server.note(note['id'])}, {page_state()}, {css('#connection-text').text}, {kept('outbox')})")
        wait(driver, lambda d: body_text() == expected, timeout=15, message=f"the editor shows it ({body_text()!r})")
        wait(driver, lambda d: css("#connection-text").text == "Synced", timeout=15, message="synced")
        self.assertEqual(css("#save-state").text, "Saved")
        self.assertEqual({n["id"]: n["body"] for n in kept()}[note["id"]], expected)

    def test_two_queued_edits_of_a_line_changed_elsewhere_keep_both(self):
        note = server.create("Plan D\nline A\nline B\nline C")
        self.queue_two_edits(note, "Plan D\nline A\nline B, edited\nline C",
                             "Plan D\nline A\nline B, edited\nline C, mine", "Plan D\nline A\nline B\nline C, theirs")
        wait_until(lambda: kept("outbox") == [], timeout=30, message=f"sent ({page_state()})")
        saved = server.note(note["id"])["body"]
        # Both changes of line C are kept (the server merges them), and line B's edit once.
        for words in ("line B, edited", "mine", "theirs"):
            self.assertIn(words, saved)
        self.assertEqual(saved.count("line B, edited"), 1)
        wait(driver, lambda d: body_text() == saved, timeout=15, message=f"the editor shows it ({body_text()!r})")
        wait(driver, lambda d: css("#connection-text").text == "Synced", timeout=15, message="synced")

    def test_an_edit_refused_when_sent_stays_with_the_user(self):
        note = server.create("Big one\nshort for now")
        open_app(f"/#/notes/{note['id']}")
        wait(driver, lambda d: body_text() == "Big one\nshort for now")
        large = "Big one\n" + "x" * 1100000
        go_offline()
        try:
            type_text(large)
            wait(driver, lambda d: css("#connection-text").text == "Offline · 1 change waiting", timeout=15,
                 message=f"waiting ({page_state()})")
        finally:
            go_online()
        wait(driver, lambda d: css("#toast").is_displayed(), timeout=30, message=f"refused ({page_state()})")
        self.assertIn("An edit made offline could not be saved: Notes can be at most 1 MiB.", css("#toast-text").text)
        # Not "Synced": the text is kept, unsaved, and the editor says why.
        wait(driver, lambda d: css("#connection-text").text == "1 change not saved", timeout=15, message="header")
        self.assertEqual(len(body_text()), len(large))
        self.assertEqual(css("#save-state").text, "Not saved")
        self.assertIn("Notes can be at most 1 MiB", css("#editor-notice-text").text)
        self.assertEqual(server.note(note["id"])["body"], "Big one\nshort for now")
        # It survives a reload.
        open_app(f"/#/notes/{note['id']}")
        wait(driver, lambda d: len(body_text()) == len(large), timeout=15, message=f"kept after a reload ({page_state()})")
        self.assertEqual(css("#connection-text").text, "1 change not saved")
        self.assertTrue(css("#editor-notice").is_displayed())
        self.assertEqual(len(kept("outbox")), 1)
        # Shortened, it is saved.
        type_text("Big one\n" + "x" * 1000)
        wait_until(lambda: server.note(note["id"])["body"] == "Big one\n" + "x" * 1000, timeout=30,
                   message=f"saved once shorter ({page_state()})")
        wait(driver, lambda d: css("#save-state").text == "Saved", timeout=15, message="saved")
        wait(driver, lambda d: css("#connection-text").text in ("Live", "Synced"), timeout=15, message="header")
        self.assertFalse(css("#editor-notice").is_displayed())
        self.assertEqual(kept("outbox"), [])

    def test_a_queued_delete_keeps_a_note_changed_elsewhere(self):
        note = server.create("Delete me offline\nfirst line")
        open_app(f"/#/notes/{note['id']}")
        wait(driver, lambda d: body_text() == "Delete me offline\nfirst line")
        go_offline()
        try:
            css("#delete").click()
            css('#confirm-actions [data-value="delete"]').click()
            wait(driver, lambda d: "Note deleted on this device" in css("#toast-text").text, message=f"queued ({page_state()})")
            self.assertEqual([(entry["kind"], entry["base"]) for entry in kept("outbox")], [("delete", 1)])
            server.update(note["id"], "Delete me offline\nfirst line\nadded by the CLI")
        finally:
            go_online()
        wait(driver, lambda d: "was changed elsewhere, so it was not deleted" in css("#toast-text").text, timeout=30,
             message=f"said ({page_state()})")
        self.assertEqual(css("#toast-text").text, "“Delete me offline” was changed elsewhere, so it was not deleted.")
        self.assertEqual(server.note(note["id"])["body"], "Delete me offline\nfirst line\nadded by the CLI")
        wait(driver, lambda d: all_css(f'.note-link[data-id="{note["id"]}"]'), timeout=15, message="listed again")
        wait_until(lambda: kept("outbox") == [], message="outbox empty")
        self.assertEqual({n["id"]: n["body"] for n in kept()}[note["id"]], "Delete me offline\nfirst line\nadded by the CLI")

    def test_a_hung_server_is_given_up_on_and_the_edits_arrive_once_it_answers(self):
        """A request the server never answers (its process stopped: the connection stays open and
        silent) is given up after the request timeout, as if offline: the text is kept on this
        device, the sync lock is let go, a second edit queues behind it, and both arrive once the
        server answers again, within the timeout and a retry."""
        note = server.create("Hung server\nfirst line")
        open_app(f"/#/notes/{note['id']}")
        wait(driver, lambda d: body_text() == "Hung server\nfirst line")
        driver.execute_script("document.body.dataset.requestTimeout = '3000'")
        server.process.send_signal(signal.SIGSTOP)
        try:
            type_text("Hung server\nfirst line\nsecond line")
            wait(driver, lambda d: css("#connection-text").text == "Offline · 1 change waiting", timeout=15,
                 message=f"given up on, kept here ({page_state()}, {css('#connection-text').text})")
            self.assertEqual(css("#save-state").text, "Saved on this device")
            time.sleep(1.5)
            type_text("Hung server\nfirst line\nsecond line\nthird line")
            wait(driver, lambda d: css("#connection-text").text == "Offline · 2 changes waiting", timeout=15,
                 message=f"the second edit queued too ({page_state()}, {css('#connection-text').text})")
            # Between tries nothing holds the sync lock (a hung request held it for good).
            wait(driver, lambda d: d.execute_async_script(
                "const done = arguments[arguments.length - 1];"
                "navigator.locks.query().then((state) => done(state.held.every((lock) => lock.name !== 'jotter-sync')));"),
                timeout=15, message="the sync lock let go")
        finally:
            server.process.send_signal(signal.SIGCONT)
        expected = "Hung server\nfirst line\nsecond line\nthird line"
        # Within the timeout (3 s) and a retry (3 s), with room for a busy machine.
        wait_until(lambda: server.note(note["id"])["body"] == expected, timeout=3 + 3 + 6,
                   message=f"both edits arrived ({server.note(note['id'])}, {page_state()}, {kept('outbox')})")
        wait(driver, lambda d: css("#connection-text").text in ("Synced", "Live"), timeout=15,
             message=f"synced ({css('#connection-text').text})")
        self.assertEqual(kept("outbox"), [])

    def test_a_large_page_on_a_slow_link_is_read_while_its_bytes_come(self):
        """The request timeout is a request's idle time, not its whole: a page of changes that
        takes longer than the timeout on a slow link, its bytes coming all the while, is read to
        its end. (The whole time was bounded: on a link that slow a large page was given up every
        time, and the first sync of a large account never ended.)"""
        big = "a line of a long note, read over a slow link\n" * 3000  # 138 kB
        ids = [server.create(f"Slow link {n}\n" + big)["id"] for n in range(2)]
        open_app()
        driver.execute_script("document.body.dataset.requestTimeout = '1500'")
        network = {"offline": False, "latency": 0, "uploadThroughput": -1}
        driver.execute_cdp_cmd("Network.enable", {})
        try:
            # 100 kB/s: the page (276 kB) takes about 3 s, twice the timeout.
            driver.execute_cdp_cmd("Network.emulateNetworkConditions", {**network, "downloadThroughput": 100_000})
            outcome = driver.execute_async_script("""
                const done = arguments[arguments.length - 1];
                const started = performance.now();
                import('/assets/api.js').then((api) => api.changes(null)).then(
                  (page) => done({ ids: page.changes.map((change) => change.id), ms: performance.now() - started }),
                  (error) => done({ error: error.message, ms: performance.now() - started }));""")
        finally:
            driver.execute_cdp_cmd("Network.emulateNetworkConditions", {**network, "downloadThroughput": -1})
            driver.execute_cdp_cmd("Network.disable", {})
        self.assertNotIn("error", outcome, f"given up after {outcome['ms']:.0f} ms")
        self.assertGreater(outcome["ms"], 1500, "the page took longer than the timeout")
        self.assertTrue(set(ids) <= set(outcome["ids"]), outcome["ids"])

    def test_an_outbox_that_cannot_be_read_is_not_taken_as_empty(self):
        """A sync that fails with no answer of the server's (here this device's storage: the outbox
        can't be read for a while) is said in the console and tried again, and the edit still
        counts as waiting: it reaches the server once the outbox can be read again. (Such a
        failure was swallowed, and the unread outbox taken as empty, which ended the retries.)"""
        note = server.create("Unreadable outbox\nfirst line")
        open_app(f"/#/notes/{note['id']}")
        wait(driver, lambda d: body_text() == "Unreadable outbox\nfirst line")
        logged = [entry["message"] for entry in driver.get_log("browser")]
        go_offline()
        try:
            type_text("Unreadable outbox\nfirst line, edited")
            wait(driver, lambda d: css("#connection-text").text == "Offline · 1 change waiting", timeout=15,
                 message=f"waiting ({page_state()})")
            driver.execute_script("""const getAll = IDBObjectStore.prototype.getAll;
                window.readableAgain = () => { IDBObjectStore.prototype.getAll = getAll; };
                IDBObjectStore.prototype.getAll = function (...args) {
                  if (this.name === 'outbox') throw new DOMException('the disk is failing', 'UnknownError');
                  return getAll.apply(this, args);
                };""")

            def said(*words):
                logged.extend(entry["message"] for entry in driver.get_log("browser"))
                return all(any(word in message for message in logged) for word in words)
            # The retry made meanwhile fails with no status: both the sync and the count say so.
            wait(driver, lambda d: said("couldn't sync; trying again", "could not be read; trying again"), timeout=15,
                 message=f"logged ({logged})")
        finally:
            go_online()
        time.sleep(1)
        self.assertEqual(css("#connection-text").text, "Offline · 1 change waiting")
        driver.execute_script("window.readableAgain()")
        wait_until(lambda: server.note(note["id"])["body"] == "Unreadable outbox\nfirst line, edited", timeout=15,
                   message=f"sent once readable ({server.note(note['id'])}, {page_state()}, {css('#connection-text').text})")
        wait(driver, lambda d: css("#connection-text").text == "Synced", timeout=15, message="synced")
        said()
        self.assertEqual([message for message in logged if "Uncaught" in message], [])

    def test_hiding_the_page_saves_the_text(self):
        note = server.create("Swiped away")
        open_app(f"/#/notes/{note['id']}", autosave=False)
        wait(driver, lambda d: body_text() == "Swiped away")
        css("#body").send_keys(", hidden")
        driver.execute_script("""Object.defineProperty(document, 'visibilityState', { value: 'hidden', configurable: true });
            document.dispatchEvent(new Event('visibilitychange'));""")
        wait_until(lambda: server.note(note["id"])["body"] == "Swiped away, hidden", timeout=15,
                   message=f"saved when hidden ({page_state()})")
        driver.execute_script("delete document.visibilityState")
        css("#body").send_keys(", then gone")
        driver.execute_script("window.dispatchEvent(new PageTransitionEvent('pagehide', { persisted: false }))")
        wait_until(lambda: server.note(note["id"])["body"] == "Swiped away, hidden, then gone", timeout=15,
                   message=f"saved on pagehide ({page_state()})")


    def close_tab_after_typing(self, note, text, away):
        """In a tab of its own: `note` open, the server made `away` (a callable), `text` typed at
        its end and the tab closed at once. The server is back after."""
        first = driver.current_window_handle
        driver.switch_to.new_window("tab")
        try:
            driver.get(server.url + f"/#/notes/{note['id']}")
            wait(driver, lambda d: body_text() == note["body"], message="the note open")
            wait(driver, lambda d: css("#connection").get_attribute("data-state") == "live", message="live")
            away()
            css("#body").send_keys(Keys.CONTROL, Keys.END)
            for part in text:
                css("#body").send_keys(part)
                if part != text[-1]:
                    wait(driver, lambda d: css("#save-state").text == "Saving…", message=f"a save on its way ({page_state()})")
            driver.close()
        finally:
            driver.switch_to.window(first)
            if server.process.poll() is None:
                server.process.send_signal(signal.SIGCONT)
            else:
                server.start()

    def test_text_typed_just_before_closing_is_kept_when_the_server_cant_be_reached(self):
        """The server away, a line typed and the tab closed at once (inside the autosave's delay,
        or while a save hangs): the text was kept nowhere. It is kept on this device as the page
        goes, and sent once the server is back."""
        note = server.create("Closed offline")
        leave_page()
        self.close_tab_after_typing(note, [", typed as the tab closed"], server.stop)
        open_app(f"/#/notes/{note['id']}")
        wait_until(lambda: server.note(note["id"])["body"] == "Closed offline, typed as the tab closed", timeout=20,
                   message=f"sent once the server is back ({server.note(note['id'])['body']!r}, {page_state()})")
        wait(driver, lambda d: body_text() == "Closed offline, typed as the tab closed", message="shown")

        # A server that stops answering (a dead link): the save hangs, and what is typed after it
        # was kept nowhere.
        note = server.create("Closed while hung")
        leave_page()
        self.close_tab_after_typing(note, [", first", ", second"], lambda: server.process.send_signal(signal.SIGSTOP))
        open_app(f"/#/notes/{note['id']}")
        wait_until(lambda: server.note(note["id"])["body"] == "Closed while hung, first, second", timeout=20,
                   message=f"sent once the server answers ({server.note(note['id'])['body']!r}, {page_state()})")

    def test_text_kept_as_a_page_closed_that_the_server_refuses_stays_on_this_device(self):
        """Text kept as the page closed (its save hung), over the server's limit: the next start
        sent it, was refused (`413`), said "kept" and dropped it. It is kept on this device as an edit the
        server refused, shown in its note, until it is shortened."""
        note = server.create("Closed too large")
        leave_page()
        first = driver.current_window_handle
        driver.switch_to.new_window("tab")
        try:
            driver.get(server.url + f"/#/notes/{note['id']}")
            wait(driver, lambda d: body_text() == note["body"], message="the note open")
            wait(driver, lambda d: css("#connection").get_attribute("data-state") == "live", message="live")
            server.process.send_signal(signal.SIGSTOP)  # hung: the save as the page goes never answers
            driver.execute_script("""
                const area = document.getElementById('body');
                area.value = 'Closed too large\\n' + 'x'.repeat(1100000);
                area.dispatchEvent(new Event('input'));""")
            driver.close()
        finally:
            driver.switch_to.window(first)
            server.process.send_signal(signal.SIGCONT)
        open_app(f"/#/notes/{note['id']}")
        wait(driver, lambda d: css("#save-state").text == "Not saved", timeout=20, message=f"refused ({page_state()})")
        self.assertEqual([(entry["kind"], bool(entry["held"])) for entry in kept("outbox")], [("edit", True)])
        wait(driver, lambda d: len(body_text()) == len("Closed too large\n") + 1100000, message="its text shown")
        self.assertIn("Notes can be at most 1 MiB", css("#editor-notice-text").text)
        self.assertEqual(css("#connection-text").text, "1 change not saved")
        self.assertEqual(server.note(note["id"])["body"], "Closed too large")
        # Shortened, it is saved, and nothing is left waiting (for the tests after this one).
        driver.execute_script("""
            const area = document.getElementById('body');
            area.value = 'Closed too large, shortened';
            area.dispatchEvent(new Event('input'));""")
        wait_until(lambda: server.note(note["id"])["body"] == "Closed too large, shortened", timeout=15,
                   message=f"saved once shorter ({page_state()})")
        wait_until(lambda: kept("outbox") == [], message="nothing left waiting")


class OpenFromAddress(BrowserTest):
    def test_a_note_opened_from_its_url_is_highlighted_in_the_list(self):
        """#/notes/{id} marks its note in the list from the first render, not after the next one."""
        notes = [server.create(f"Linked note {index}") for index in range(3)]
        target = notes[1]
        open_app(f"/#/notes/{target['id']}", autosave=False)
        wait(driver, lambda d: body_text() == "Linked note 1")
        current = driver.execute_script("return [...document.querySelectorAll('#notes [aria-current=\"page\"]')].map((e) => e.dataset.id)")
        self.assertEqual(current, [target["id"]])
        # The next note opened from the list moves the mark.
        link(notes[2]["id"]).click()
        wait(driver, lambda d: link(notes[2]["id"]).get_attribute("aria-current") == "page")
        self.assertIsNone(link(target["id"]).get_attribute("aria-current"))


class Console(BrowserTest):
    def test_auth_off_asks_nothing_that_fails(self):
        """Under --auth off a newcomer's devtools stay clean: no /auth/me (a 401 there), no error."""
        driver.get_log("browser")  # what earlier tests left
        open_app("/")
        paths = driver.execute_script("return performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname)")
        self.assertNotIn("/auth/me", paths)
        self.assertIn("/notes", paths)
        errors = [entry for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]
        self.assertEqual(errors, [])


class FirstAccount(unittest.TestCase):
    def test_with_no_user_yet_the_sign_in_page_says_how_the_first_is_made(self):
        """Under `--auth required` with no user, the sign-in page only said "Sign in to see your
        notes": nobody could, and nothing said why. The server's page says that no account
        exists (and nothing more), and the app says how the first one is made."""
        data = tempfile.mkdtemp(prefix="jotter-browser-first-")
        first = Server(BINARY, data=data, arguments=["--auth", "required"])
        browser = chrome(timezone=TIMEZONE)
        try:
            def sign_in_reason():
                browser.get(first.url + "/")
                wait(browser, lambda d: d.find_element(By.ID, "sign-in-dialog").is_displayed(), message="the sign-in page")
                return browser.find_element(By.ID, "sign-in-reason").text

            reason = sign_in_reason()
            self.assertIn("No account exists on this server yet", reason)
            self.assertIn("jotter users add NAME --admin", reason)
            self.assertFalse(browser.find_element(By.ID, "sign-in-button").is_displayed())
            self.assertFalse(browser.find_element(By.ID, "toast").is_displayed())
            subprocess.run([BINARY, "users", "add", "ann", "--admin", "--data", data], input=b"ann's password\n",
                           check=True, capture_output=True)
            # (The server reads whether there is a user at most every 10 s.)
            wait_until(lambda: sign_in_reason() == "Sign in to see your notes." or time.sleep(1), timeout=30,
                       message="the usual sign-in page once there is a user")
        finally:
            quit_chrome(browser)
            first.close()
            shutil.rmtree(data, ignore_errors=True)


class Accounts(unittest.TestCase):
    """Two people on a server that requires sign-in, each in a browser of their own (cookies
    ignore ports, so these browsers never visit the other tests' server)."""

    @classmethod
    def setUpClass(cls):
        cls.data = tempfile.mkdtemp(prefix="jotter-browser-accounts-")
        for name in ["ann", "bob"]:
            subprocess.run([BINARY, "users", "add", name, "--data", cls.data], input=f"{name}'s password\n".encode(),
                           check=True, capture_output=True)
        cls.server = Server(BINARY, data=cls.data, arguments=["--auth", "required"])
        cls.ann = chrome(timezone=TIMEZONE)
        cls.bob = chrome(timezone=TIMEZONE)

    @classmethod
    def tearDownClass(cls):
        for browser in [cls.ann, cls.bob]:
            quit_chrome(browser)
        cls.server.close()
        shutil.rmtree(cls.data, ignore_errors=True)

    def sign_in(self, browser, name):
        """Signs in through the dialog, unless this browser's session is `name`'s already."""
        wait(browser, lambda d: d.find_element(By.ID, "sign-in-dialog").is_displayed()
             or d.find_element(By.ID, "account-name").text == name, message="sign-in shown")
        if not browser.find_element(By.ID, "sign-in-dialog").is_displayed():
            return
        browser.find_element(By.ID, "sign-in-name").clear()
        browser.find_element(By.ID, "sign-in-name").send_keys(name)
        browser.find_element(By.ID, "sign-in-password").send_keys(f"{name}'s password")
        browser.find_element(By.ID, "sign-in-submit").click()
        wait(browser, lambda d: not d.find_element(By.ID, "sign-in-dialog").is_displayed(), message="signed in")
        wait(browser, lambda d: d.find_element(By.ID, "account-name").text == name)
        wait(browser, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "live", message="live")

    def write(self, browser, text):
        browser.get(self.server.url + "/#/new")
        wait(browser, lambda d: d.find_element(By.ID, "body").is_displayed())
        browser.find_element(By.ID, "body").send_keys(text)
        browser.find_element(By.ID, "save").click()
        wait(browser, lambda d: d.find_element(By.ID, "save-state").text == "Saved", message="saved")

    @staticmethod
    def titles(browser):
        return browser.execute_script("return [...document.querySelectorAll('#notes .note-title')].map((e) => e.textContent)")

    def test_first_visit_is_a_sign_in_page_and_signing_out_says_so(self):
        browser = chrome(timezone=TIMEZONE)
        try:
            browser.get(self.server.url + "/#/notes/1")
            wait(browser, lambda d: d.find_element(By.ID, "sign-in-dialog").is_displayed(), message="the sign-in page")
            self.assertEqual(browser.find_element(By.ID, "sign-in-reason").text, "Sign in to see your notes.")
            # Nothing failed on the way: no error, no "Reconnecting…", no list that could not load.
            self.assertFalse(browser.find_element(By.ID, "toast").is_displayed())
            self.assertFalse(browser.find_element(By.ID, "connection").is_displayed())
            self.assertFalse(browser.find_element(By.ID, "sign-in-error").is_displayed())
            paths = browser.execute_script("return performance.getEntriesByType('resource').map((e) => new URL(e.name).pathname)")
            self.assertFalse([path for path in paths if path.startswith("/notes")], paths)
            self.sign_in(browser, "ann")
            wait(browser, lambda d: d.find_element(By.ID, "notes").get_attribute("aria-busy") == "false", message="list loaded")
            browser.find_element(By.ID, "sign-out").click()
            wait(browser, lambda d: d.find_element(By.ID, "sign-in-dialog").is_displayed(), message="signed out")
            reason = browser.find_element(By.ID, "sign-in-reason").text
            self.assertEqual(reason, "You are signed out. Sign in to see your notes.")
            self.assertNotIn("ended", reason)
            self.assertFalse(browser.find_element(By.ID, "connection").is_displayed())
        finally:
            quit_chrome(browser)

    def test_signed_in_at_320_px_the_bar_fits(self):
        """Signed in, the bar holds the name and "Sign out" too: still no sideways scroll, "New note" whole."""
        browser = chrome(timezone=TIMEZONE)
        try:
            Phone.at_width(self, 320, browser)
            browser.get(self.server.url + "/")
            self.sign_in(browser, "ann")
            wait(browser, lambda d: d.find_element(By.ID, "notes").get_attribute("aria-busy") == "false", message="list loaded")
            self.assertTrue(browser.find_element(By.ID, "sign-out").is_displayed())
            Phone.fits(self, browser, 320, "signed-in")
        finally:
            quit_chrome(browser)

    def test_sign_in_and_another_user_sees_nothing_live(self):
        for browser, name in [(self.ann, "ann"), (self.bob, "bob")]:
            browser.get(self.server.url + "/")
            self.sign_in(browser, name)
        cookie = self.ann.get_cookie("jotter_session")
        self.assertTrue(cookie["httpOnly"])
        self.assertEqual(cookie["sameSite"], "Lax")
        self.assertIn("expiry", cookie)
        self.write(self.ann, "Ann's first secret")
        self.write(self.bob, "Bob's own note")
        self.ann.get(self.server.url + "/")
        wait(self.ann, lambda d: "Ann's first secret" in self.titles(d))
        self.bob.get(self.server.url + "/")
        wait(self.bob, lambda d: "Bob's own note" in self.titles(d))
        wait(self.bob, lambda d: d.find_element(By.ID, "connection").get_attribute("data-state") == "live")
        # Ann writes while Bob watches: Bob's list never shows it; Bob's own writes still arrive live.
        self.write(self.ann, "Ann's second secret")
        status, _, answer = self.server.request("POST", "/notes", {"body": "Bob's live note"},
                                                headers={"Authorization": f"Bearer {self.token('bob')}"})
        self.assertEqual(status, 201, answer)
        wait(self.bob, lambda d: "Bob's live note" in self.titles(d), message="bob's live note")
        self.assertFalse([t for t in self.titles(self.bob) if t.startswith("Ann")], self.titles(self.bob))
        self.assertFalse([t for t in self.titles(self.ann) if t.startswith("Bob")], self.titles(self.ann))

    def token(self, name):
        status, _, answer = self.server.request("POST", "/auth/sessions", {"name": name, "password": f"{name}'s password", "kind": "token"})
        self.assertEqual(status, 201, answer)
        return answer["token"]

    def users(self, *arguments, password=None):
        subprocess.run([BINARY, "users", *arguments, "--data", self.data], input=password, check=True, capture_output=True)

    def test_a_new_account_with_a_removed_ones_name_never_sees_its_notes(self):
        """Carol's account is removed while this browser keeps her copy of the notes (a session that
        ends on the server clears nothing here); a new account named carol signs in on it: the copy
        is emptied, and her notes are not shown."""
        self.users("add", "carol", password=b"carol's password\n")
        browser = chrome(timezone=TIMEZONE)
        try:
            browser.get(self.server.url + "/")
            self.sign_in(browser, "carol")
            self.write(browser, "Carol's secret")
            # (Restarted: the server keeps a session it has checked for a few seconds.)
            self.server.stop()
            self.users("remove", "carol", "--yes")
            self.users("add", "carol", password=b"carol's password\n")
            self.server.start()
            browser.get(self.server.url + "/")
            self.sign_in(browser, "carol")
            wait(browser, lambda d: d.find_element(By.ID, "notes").get_attribute("aria-busy") == "false", message="the list")
            self.assertFalse([t for t in self.titles(browser) if t.startswith("Carol")], self.titles(browser))
            self.assertEqual(kept(browser=browser), [])
        finally:
            if self.server.process.poll() is not None:
                self.server.start()
            self.users("remove", "carol", "--yes")
            quit_chrome(browser)

    def test_an_edit_waiting_when_the_account_is_made_again_is_still_sent(self):
        """Dave's account is made again (as after a restore of a backup older than it) while his
        edit waits in this browser: the browser can't tell him from a new person, and an edit is
        never dropped — it is sent, as the account signed in (its note gone: as a new note)."""
        self.users("add", "dave", password=b"dave's password\n")
        browser = chrome(timezone=TIMEZONE)
        try:
            browser.get(self.server.url + "/")
            self.sign_in(browser, "dave")
            self.write(browser, "Dave's list")
            note = browser.current_url.rsplit("/", 1)[1]
            self.server.stop()
            self.offline_edit(browser, note, "\nbread")
            self.users("remove", "dave", "--yes")
            self.users("add", "dave", password=b"dave's password\n")
            self.server.start()
            browser.get(self.server.url + "/")
            self.sign_in(browser, "dave")
            dave = {"Authorization": f"Bearer {self.token('dave')}"}
            wait_until(lambda: any("bread" in n["body"] for n in self.server.request("GET", "/notes", headers=dave)[2]["notes"]),
                       timeout=20, message="the waiting edit sent")
        finally:
            if self.server.process.poll() is not None:
                self.server.start()
            self.users("remove", "dave", "--yes")
            quit_chrome(browser)

    def test_signing_out_when_the_waiting_changes_cannot_be_read_asks_first(self):
        """Signing out deletes this browser's copy: when this device's storage can't say what
        waits (the outbox can't be read), it is not taken as empty — the user is asked, and
        staying signed in keeps everything."""
        browser = chrome(timezone=TIMEZONE)
        try:
            browser.get(self.server.url + "/")
            self.sign_in(browser, "ann")
            self.write(browser, "Ann's unreadable outbox")
            browser.execute_script("""const getAll = IDBObjectStore.prototype.getAll;
                IDBObjectStore.prototype.getAll = function (...args) {
                  if (this.name === 'outbox') throw new DOMException('the disk is failing', 'UnknownError');
                  return getAll.apply(this, args);
                };""")
            browser.find_element(By.ID, "sign-out").click()
            wait(browser, lambda d: d.find_element(By.ID, "confirm-dialog").is_displayed(), timeout=15, message="asked first")
            self.assertIn("could not be read", browser.find_element(By.ID, "confirm-text").text)
            browser.find_element(By.CSS_SELECTOR, "#confirm-actions button").click()  # Stay signed in (the first, safe choice)
            self.assertEqual(browser.find_element(By.ID, "account-name").text, "ann")
            self.assertFalse(browser.find_element(By.ID, "sign-in-dialog").is_displayed())
        finally:
            quit_chrome(browser)

    def test_signing_out_with_changes_waiting_asks_before_deleting_them(self):
        """Signing out deletes this browser's copy: what waits is sent first, and what can't be
        sent (the server away) is deleted only if the user says so."""
        browser = chrome(timezone=TIMEZONE)

        def sign_out_with_an_edit_waiting(text):
            """With the server stopped: `text` typed and saved (it waits), then "Sign out", which asks."""
            self.server.stop()
            browser.find_element(By.ID, "body").send_keys(text)
            browser.find_element(By.ID, "save").click()
            wait(browser, lambda d: d.find_element(By.ID, "connection-text").text == "Offline · 1 change waiting", message="waiting")
            browser.find_element(By.ID, "sign-out").click()
            wait(browser, lambda d: d.find_element(By.ID, "confirm-dialog").is_displayed(), message="asked first")

        try:
            browser.get(self.server.url + "/")
            self.sign_in(browser, "ann")
            wait(browser, lambda d: d.execute_script("return navigator.serviceWorker.controller !== null"), message="service worker")
            self.write(browser, "Ann's note")
            note = browser.current_url.rsplit("/", 1)[1]
            sign_out_with_an_edit_waiting(", edited offline")
            self.assertIn("One change made on this device has not reached the server", browser.find_element(By.ID, "confirm-text").text)
            browser.find_element(By.CSS_SELECTOR, "#confirm-actions button").click()  # Stay signed in (the first, safe choice)
            self.assertEqual(browser.find_element(By.ID, "account-name").text, "ann")
            self.assertEqual(len(kept("outbox", browser)), 1)
            self.server.start()
            wait(browser, lambda d: d.find_element(By.ID, "connection-text").text == "Synced", timeout=20, message="sent once the server is back")
            token = {"Authorization": f"Bearer {self.token('ann')}"}
            self.assertEqual(self.server.request("GET", f"/notes/{note}", headers=token)[2]["note"]["body"], "Ann's note, edited offline")

            # Away again: this time the user chooses to delete the change. But only the server can
            # end the session (its cookie is HttpOnly): while it is away, this browser stays signed
            # in, says so, and deletes nothing. The session still works, so the page must not say
            # "signed out" (the next person at this browser would be signed in as ann).
            session = browser.get_cookie("jotter_session")["value"]
            sign_out_with_an_edit_waiting(" twice")
            browser.find_element(By.CSS_SELECTOR, '#confirm-actions [data-value="delete"]').click()
            wait(browser, lambda d: d.find_element(By.ID, "toast").is_displayed(), message="told")
            self.assertIn("Couldn't sign out", browser.find_element(By.ID, "toast-text").text)
            self.assertIn("still signed in", browser.find_element(By.ID, "toast-text").text)
            self.assertFalse(browser.find_element(By.ID, "sign-in-dialog").is_displayed())
            self.assertEqual(browser.find_element(By.ID, "account-name").text, "ann")
            self.assertEqual(len(kept("outbox", browser)), 1)
            # Back: the change goes, and signing out ends the session on the server.
            self.server.start()
            wait(browser, lambda d: d.find_element(By.ID, "connection-text").text == "Synced", timeout=20, message="sent once the server is back")
            browser.find_element(By.ID, "sign-out").click()
            wait(browser, lambda d: d.find_element(By.ID, "sign-in-dialog").is_displayed(), message="signed out")
            self.assertEqual((kept("outbox", browser), kept("allNotes", browser)), ([], []))
            self.assertEqual(self.server.request("GET", "/auth/me", headers={"Authorization": f"Bearer {session}"})[0], 401)
        finally:
            if self.server.process.poll() is not None:
                self.server.start()
            quit_chrome(browser)
        self.assertEqual(self.server.request("GET", f"/notes/{note}", headers=token)[2]["note"]["body"], "Ann's note, edited offline twice")

    def test_a_session_ended_while_the_page_is_idle_asks_to_sign_in(self):
        """The event stream's 401 (the session revoked while nobody writes) opens the sign-in
        dialog, as a write's 401 does, instead of "Reconnecting…" for ever."""
        browser = chrome(timezone=TIMEZONE)
        try:
            browser.get(self.server.url + "/")
            self.sign_in(browser, "ann")
            session = browser.get_cookie("jotter_session")["value"]
            status, _, _ = self.server.request("DELETE", "/auth/sessions/current", headers={"Authorization": f"Bearer {session}"})
            self.assertEqual(status, 204)
            wait(browser, lambda d: d.find_element(By.ID, "sign-in-dialog").is_displayed(), timeout=30,
                 message=f"asked to sign in ({browser.find_element(By.ID, 'connection-text').text})")
            self.assertIn("ended", browser.find_element(By.ID, "sign-in-reason").text)
            self.sign_in(browser, "ann")  # and live again
        finally:
            quit_chrome(browser)

    def offline_edit(self, browser, note, text):
        """With the server stopped: `text` typed at the end of `note` and saved on this device."""
        browser.get(self.server.url + f"/#/notes/{note}")
        wait(browser, lambda d: d.find_element(By.ID, "body").is_displayed(), message="the note open")
        browser.find_element(By.ID, "body").send_keys(Keys.CONTROL, Keys.END)
        browser.find_element(By.ID, "body").send_keys(text)
        browser.find_element(By.ID, "save").click()
        wait(browser, lambda d: d.find_element(By.ID, "connection-text").text == "Offline · 1 change waiting", message="waiting")

    def test_signed_in_the_app_starts_offline_and_sends_the_edit_once_the_server_is_back(self):
        """Under --auth required a reload with the server away is the signed-in user's app, from
        this device, not a sign-in page; the edit made then goes (with the session's CSRF token,
        fetched first) once the server is back."""
        browser = chrome(timezone=TIMEZONE)
        try:
            browser.get(self.server.url + "/")
            self.sign_in(browser, "ann")
            wait(browser, lambda d: d.execute_script("return navigator.serviceWorker.controller !== null"), message="service worker")
            self.write(browser, "Ann away\nfrom the office")
            note = browser.current_url.rsplit("/", 1)[1]
            wait(browser, lambda d: note in [n["id"] for n in kept("allNotes", d)], message="kept on this device")
            self.server.stop()
            browser.get("about:blank")
            browser.get(self.server.url + "/")
            wait(browser, lambda d: "Ann away" in self.titles(d), message="the notes from this device")
            self.assertFalse(browser.find_element(By.ID, "sign-in-dialog").is_displayed())
            self.assertEqual(browser.find_element(By.ID, "account-name").text, "ann")
            self.offline_edit(browser, note, ", then home")
            self.server.start()
            wait(browser, lambda d: d.find_element(By.ID, "connection-text").text == "Synced", timeout=20, message="sent")
            token = {"Authorization": f"Bearer {self.token('ann')}"}
            self.assertEqual(self.server.request("GET", f"/notes/{note}", headers=token)[2]["note"]["body"],
                             "Ann away\nfrom the office, then home")
        finally:
            if self.server.process.poll() is not None:
                self.server.start()
            quit_chrome(browser)

    def test_another_user_signing_in_here_never_sends_the_first_users_edits(self):
        """Ann's session ends with her edit waiting and Bob signs in on the same browser: Bob sees
        his own notes, and Ann's edit stays in her copy until she signs in again."""
        browser = chrome(timezone=TIMEZONE)
        try:
            browser.get(self.server.url + "/")
            self.sign_in(browser, "ann")
            self.write(browser, "Ann's list")
            note = browser.current_url.rsplit("/", 1)[1]
            self.server.stop()
            self.offline_edit(browser, note, "\nmilk")
            # Her session ends while the server is away; Bob signs in when it is back.
            browser.delete_cookie("jotter_session")
            self.server.start()
            wait(browser, lambda d: d.find_element(By.ID, "sign-in-dialog").is_displayed(), timeout=20, message="asked to sign in")
            self.sign_in(browser, "bob")
            wait(browser, lambda d: d.find_element(By.ID, "notes").get_attribute("aria-busy") == "false", message="bob's list")
            self.assertEqual(kept("outbox", browser), [])
            self.assertFalse([t for t in self.titles(browser) if t.startswith("Ann")], self.titles(browser))
            bob = {"Authorization": f"Bearer {self.token('bob')}"}
            self.assertFalse([n for n in self.server.request("GET", "/notes", headers=bob)[2]["notes"] if "milk" in n["body"]])
            ann = {"Authorization": f"Bearer {self.token('ann')}"}
            self.assertEqual(self.server.request("GET", f"/notes/{note}", headers=ann)[2]["note"]["body"], "Ann's list")
            # Bob signs out (nothing of his waits); Ann signs in and her edit goes.
            browser.find_element(By.ID, "sign-out").click()
            wait(browser, lambda d: d.find_element(By.ID, "sign-in-dialog").is_displayed(), message="signed out")
            self.sign_in(browser, "ann")
            wait_until(lambda: self.server.request("GET", f"/notes/{note}", headers=ann)[2]["note"]["body"] == "Ann's list\nmilk",
                       timeout=20, message="ann's edit sent once she is back")
            wait(browser, lambda d: d.find_element(By.ID, "connection-text").text == "Synced", timeout=20, message="synced")
        finally:
            if self.server.process.poll() is not None:
                self.server.start()
            quit_chrome(browser)

    def test_an_ended_session_asks_to_sign_in_and_keeps_the_text(self):
        self.ann.get(self.server.url + "/")
        self.sign_in(self.ann, "ann")
        self.ann.get(self.server.url + "/#/new")
        wait(self.ann, lambda d: d.find_element(By.ID, "body").is_displayed())
        self.ann.find_element(By.ID, "body").send_keys("Typed before the session ended")
        # The session ends on the server (as it would when it expires).
        session = self.ann.get_cookie("jotter_session")["value"]
        status, _, _ = self.server.request("DELETE", "/auth/sessions/current", headers={"Authorization": f"Bearer {session}"})
        self.assertEqual(status, 204)
        self.ann.find_element(By.ID, "save").click()
        wait(self.ann, lambda d: d.find_element(By.ID, "sign-in-dialog").is_displayed(), message="asked to sign in")
        self.assertIn("still here", self.ann.find_element(By.ID, "sign-in-reason").text)
        self.sign_in(self.ann, "ann")
        self.assertEqual(self.ann.execute_script("return document.getElementById('body').value"), "Typed before the session ended")
        self.ann.find_element(By.ID, "save").click()
        wait(self.ann, lambda d: d.find_element(By.ID, "save-state").text == "Saved", message="saved after signing in")


if __name__ == "__main__":
    started = time.monotonic()
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    # `test_web.py NAME…`: only the tests whose id (`Class.test_name`) holds one of the NAMEs.
    if sys.argv[1:]:
        def tests(suite):
            for test in suite:
                yield from tests(test) if isinstance(test, unittest.TestSuite) else [test]
        suite = unittest.TestSuite(test for test in tests(suite) if any(name in test.id() for name in sys.argv[1:]))
    result = unittest.TextTestRunner(verbosity=2).run(suite)
    failed = len(result.failures) + len(result.errors)
    over = "HTTPS, HTTP/2" if harness.TLS else "HTTP/1.1"
    print(f"browser tests ({over}) took {time.monotonic() - started:.1f} s")
    print(f"browser ({over}): {result.testsRun - failed} passed, {failed} failed")
    sys.exit(0 if result.wasSuccessful() else 1)
