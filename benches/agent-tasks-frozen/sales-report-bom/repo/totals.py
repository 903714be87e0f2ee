def by_region(rows):
    """Sum the amount column per region."""
    out = {}
    for row in rows:
        region = row["region"].strip()
        out[region] = out.get(region, 0.0) + float(row["amount"])
    return out
