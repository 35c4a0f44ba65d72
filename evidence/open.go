package evidence

// MaxDocumentBytes bounds a JSON document of an evidence directory that is
// read whole (scenario.json, attack.json, manifest.json, stats/*.json,
// rls/*.json): 64 MiB. JSON Lines files are read line by line (ReadLines)
// and bounded per line instead. Evidence files are opened and read through
// evidence/boundedio (regular files only, a size limit that is an error,
// reads that stop when the context is done).
const MaxDocumentBytes = 64 << 20
