"""docs/user/REPORT.md's growth rule, written again from its text: the
truth the growth the report tells is checked against."""


def growth_rule(values):
    """docs/user/REPORT.md, "Growth across openings", on a series of totals at
    closings: the rises in a row up to the last; growth from 3 of them."""
    rises = 0
    for k in range(len(values) - 1, 0, -1):
        if values[k] <= values[k - 1]:
            break
        rises += 1
    if rises < 3:
        return None
    first = len(values) - 1 - rises
    return {"per_opening_bytes": (values[-1] - values[first]) // rises,
            "from_opening": first + 2, "openings": rises,
            "first_bytes": values[first], "last_bytes": values[-1]}
