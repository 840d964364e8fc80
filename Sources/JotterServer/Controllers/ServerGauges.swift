import Glibc
import JotterAPI
import JotterHTTP
import JotterStore
import JotterSystem

/// The gauges `/metrics` shows beside the request counts: what is stored, open event streams,
/// free space, uptime and the build. Read when scraped (a count of each table: fine at scrape
/// intervals).
struct ServerGauges: Sendable {
    let store: any DataStore
    let dataDirectory: String
    let events: EventBroadcaster
    /// Monotonic seconds at start-up.
    let started = MonotonicClock.seconds()

    /// The Prometheus text of every gauge; what can't be read (the store closing) is left out.
    func render() -> String {
        var text = ""
        func gauge(_ name: String, _ help: String, _ value: some Numeric, labels: String = "") {
            text += "# HELP \(name) \(help)\n# TYPE \(name) gauge\n\(name)\(labels) \(value)\n"
        }
        if let statistics = try? store.storageStatistics() {
            gauge("jotter_notes", "Notes stored.", statistics.notes)
            gauge("jotter_uploads", "Uploads stored.", statistics.uploads)
            gauge("jotter_upload_bytes", "Bytes of the stored uploads.", statistics.uploadBytes)
            gauge("jotter_database_bytes", "Bytes of the database (SQLite: the file and its write-ahead log).", statistics.databaseBytes)
        }
        if let free = HealthCheck.freeBytes(dataDirectory) {
            gauge("jotter_data_free_bytes", "Bytes free for the data folder.", free)
        }
        gauge("jotter_event_streams", "Open /notes/events streams.", events.count)
        gauge("jotter_uptime_seconds", "Seconds since the server started.", (MonotonicClock.seconds() - started).rounded())
        gauge(
            "jotter_build_info", "The running build: jotter version and the database schema version it writes.", 1,
            labels: "{version=\"\(Metrics.escape(JotterBuild.version))\",schema_version=\"\(store.schemaVersion)\"}")
        return text
    }
}
