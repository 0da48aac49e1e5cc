// Preloaded into dynalite by internal/dynalitetest (node --require): dynalite
// rethrows a request's 'error' event, and a request whose caller went away
// before sending it whole ("aborted", ECONNRESET) then ends the process.
// Such a request was never parsed and has no effect: drop it, say so on
// stderr, and serve on. Every other uncaught exception still ends the process.
process.on('uncaughtException', (err) => {
  if (err && err.code === 'ECONNRESET' && err.message === 'aborted') {
    console.error('dynalitetest: dropped an aborted request')
    return
  }
  console.error(err)
  process.exit(1)
})
