def read_records(path):
    """Rows of a comma-separated file as dicts keyed by the header line."""
    with open(path) as fh:
        header = fh.readline().rstrip("\n").split(",")
        records = []
        for line in fh:
            line = line.rstrip("\n")
            if not line:
                continue
            records.append(dict(zip(header, line.split(","))))
        return records
