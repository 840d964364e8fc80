import JotterCLICore
import JotterClient

/// Deletes each of `ids` in turn with `delete`, as `notes rm` and `uploads rm` do: one that
/// can't be deleted is reported on standard error and the others are still deleted; the status
/// is then that of the first failure. An unreachable server (or a single id) ends it with the
/// error. `said` is the line printed for each deleted one (nil: print nothing, for `--json`).
func deleteEach<Item>(
    _ ids: [String], console: Console, said: ((Item) -> String)?,
    delete: (String) async throws(JotterClientError) -> Item
) async throws(JotterClientError) -> (deleted: [Item], status: Int32) {
    var deleted: [Item] = []
    var status = ExitCode.success
    for id in ids {
        do throws(JotterClientError) {
            let item = try await delete(id)
            deleted.append(item)
            if let said { console.out(said(item)) }
        } catch {
            // A server that can't be reached won't answer for the next ids either.
            if error.isTransport || ids.count == 1 { throw error }
            let failure = CommandFailure(error)
            console.err("error: \(failure.message)\n")
            if status == ExitCode.success { status = failure.status }
        }
    }
    return (deleted, status)
}
