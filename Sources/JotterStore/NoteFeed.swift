/// The change feed (`NoteStore.changes`): every note of an owner that changed after a cursor,
/// each once, in its latest state, in commit order.
///
/// It is kept as one row per note ever made (`note_changes`), written where every write
/// appends its event (SQLite's `NoteWriter.appendEvent`, PostgreSQL's `appendEvent` statement
/// part): the row's `seq` is that event's id, so the feed's cursors and the event stream's ids
/// are one space. A deleted note's row stays as a tombstone for `FeedRetention`; pruning one
/// raises the feed's horizon (`prunedThrough`), and a cursor below it, or above the last event
/// id (a database restored from an older backup), starts a walk of the complete current state.
///
/// ```swift
/// var cursor: Int64? = nil
/// repeat {
///     let page = try store.changes(NoteFeedQuery(since: cursor, limit: 101), owner: owner)
///     let count = min(page.entries.count, 100)
///     … apply page.entries.prefix(count); if page.walk, drop afterwards what the walk did not name …
///     cursor = page.cursor(count: count, more: page.entries.count > 100)
/// } while …
/// ```
public struct NoteFeedQuery: Sendable, Hashable {
    /// The cursor: an event id (`NoteEvent.id`, 0: before the first) or the cursor of an earlier
    /// page; a negative one continues a walk (`NoteFeedPage.cursor`). Nil: a walk from the start.
    public var since: Int64?
    /// At most this many entries.
    public var limit: Int
    /// A budget of body bytes (UTF-8): once the entries read hold this many, one more is read
    /// and no more (`NoteQuery.cut` cuts the page). Nil: none.
    public var maxBodyBytes: Int?

    public init(since: Int64? = nil, limit: Int = 100, maxBodyBytes: Int? = nil) {
        self.since = since
        self.limit = limit
        self.maxBodyBytes = maxBodyBytes
    }
}

/// One note in the change feed, in the state its latest change left it: its place and
/// version; a live note's content is in the page's `notes` (`NoteFeedPage.note(at:)`).
public struct NoteFeedEntry: Sendable, Hashable {
    public var noteID: Int64
    /// The id of the event of the note's latest change: its place in the feed.
    public var seq: Int64
    /// The note's version after that change (for a deletion, the version it was deleted at).
    public var version: Int64
    /// Whether the change was the note's deletion (a tombstone).
    public var deleted: Bool
}

/// A page of the change feed as the store read it, from one snapshot: its entries, and the
/// live ones' notes as a `NotePage` (one buffer of bodies, as a listing's: no `String` per
/// note), so the answer is written straight from the rows.
///
/// ```swift
/// var live = 0
/// for entry in page.entries {
///     guard !entry.deleted else { … a tombstone …; continue }
///     page.notes.withBody(at: live) { utf8 in … }   // page.notes[live].id == entry.noteID
///     live += 1
/// }
/// ```
public struct NoteFeedPage: Sendable {
    /// In feed order (`seq` ascending): at most the query's `limit`.
    public var entries: [NoteFeedEntry]
    /// The live entries' notes, in the entries' order (the `k`-th entry that is not deleted is
    /// `notes[k]`), with their attachments.
    public var notes: NotePage
    /// Whether this page is part of a walk of the complete current state (no cursor, one the
    /// feed no longer holds, or a walk's own): once the walk's last page is read, whatever the
    /// walk did not name is gone.
    public var walk: Bool
    /// The last event id visible to the snapshot the page was read from.
    public var head: Int64
}

extension NoteFeedPage {
    /// An empty page.
    init(walk: Bool, head: Int64) {
        self.init(entries: [], notes: NotePage(), walk: walk, head: head)
    }

    /// Each entry's note as a record (its body a `String`), nil for a tombstone: in entry order.
    public var records: [NoteRecord?] {
        var live = 0
        return entries.map { entry in
            guard !entry.deleted else { return nil }
            defer { live += 1 }
            return notes.record(at: live)
        }
    }

    /// Each entry's body size in UTF-8 bytes (0 for a tombstone), in entry order: what
    /// `NoteQuery.cut` cuts the page by.
    public var bodySizes: [Int] {
        var live = 0
        return entries.map { entry in
            guard !entry.deleted else { return 0 }
            defer { live += 1 }
            return notes[live].bodyCount
        }
    }

    /// The cursor after the first `count` entries: with `more` (entries follow), the `seq` of
    /// the last one — negated in a walk, so that passing it back goes on with the walk instead
    /// of starting one — else the last event id (every change up to it is in the pages read).
    public func cursor(count: Int, more: Bool) -> Int64 {
        let last = count > 0 ? entries[count - 1].seq : 0
        guard more, count > 0 else { return max(head, last) }
        return walk ? -last : last
    }

    /// Where a page starts (entries with `seq` above it) and whether it walks, given `since`,
    /// the feed's horizon and the last event id.
    static func start(since: Int64?, prunedThrough: Int64, head: Int64) -> (after: Int64, walk: Bool) {
        guard let since else { return (0, true) }
        // A walk going on (a bogus one restarts; Int64.min, which has no negation, is bogus).
        if since < 0 { return (since != .min && -since <= head ? -since : 0, true) }
        if since < prunedThrough || since > head { return (0, true) }  // tombstones after it are gone, or never issued
        return (since, false)
    }
}

/// How long the change feed keeps a deleted note's tombstone (`--feed-days`): a client whose
/// cursor is older than a pruned tombstone gets a walk of the complete state instead.
public struct FeedRetention: Sendable, Hashable {
    /// Seconds a tombstone is kept.
    public var tombstones: Int64

    public init(days: Int) { tombstones = Int64(days) * 86_400 }

    public init(seconds: Int64) { tombstones = seconds }
}
