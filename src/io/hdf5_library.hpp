// HDF5's shutdown, done by the executable instead of HDF5's exit handler.
//
// When H5Fclose fails (a file whose metadata cannot be written: a full disk), HDF5 1.10 — Debian's
// 1.10.8 among them — frees the file's state but keeps its identifier (CVE-2020-10812, HDF5 issue
// 2257, changed upstream by pull request 2291). Its exit handler later closes that identifier
// again and the process dies by SIGSEGV in H5F__close_cb instead of exiting with its status. So
// `depthbench` turns the exit handler off before its first HDF5 call, closes every file through
// close_hdf5_file, which remembers a failed close, and shuts the library down itself at the end,
// unless a close failed: then the identifier must never be touched again, and the process exits
// without the shutdown (the kernel releases what HDF5 still holds; no file is written there).
#pragma once
#include <hdf5.h>

namespace db {

// First thing in main, before any HDF5 call: no exit handler, shut_down_hdf5 does its work.
void take_over_hdf5_shutdown();

// H5Fclose, remembering a failure: the closer of every HDF5 file handle (H5Handle(id,
// close_hdf5_file)). Returns what H5Fclose returned; after a failure `file` is dead.
herr_t close_hdf5_file(hid_t file);

// Whether a close has failed in this process.
bool hdf5_close_failed();

// The end of main: H5close() when every close succeeded; nothing otherwise (see above).
void shut_down_hdf5();

}  // namespace db
