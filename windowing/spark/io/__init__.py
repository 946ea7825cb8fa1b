"""Files and folders: file operations on local paths and through Hadoop's ``FileSystem``
(``files.py``), paths compared resolved and the query's input folders (``paths.py``), and which
query owns an output folder and runs a checkpoint now (``ownership.py``)."""
