/* Polynomial laws of degree at most 2: see fit_law.h. */
#include "fit_law.h"

#include <math.h>
#include <string.h>

#define MAX_POINTS 64

const char *vt_fit_law_name(enum vt_fit_law_kind k)
{
    switch (k) {
    case VT_LAW_CONSTANT:
        return "constant";
    case VT_LAW_LINEAR:
        return "linear";
    case VT_LAW_QUADRATIC:
        return "quadratic";
    }
    return "?";
}

double vt_fit_law_at(const struct vt_fit_law *l, double x)
{
    return l->c[0] + x * (l->c[1] + x * l->c[2]);
}

/* Least squares of degree deg (0..2) through the points, by the normal
 * equations on x scaled to [0, 1]-ish (values up to millions, squared,
 * would lose the constant term otherwise). False: singular. */
static bool least_squares(const double *x, const double *y, size_t n, int deg, double c[3])
{
    double scale = 0;
    for (size_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(x[i]));
    if (scale == 0)
        scale = 1;
    int m = deg + 1;
    double a[3][4] = {{0}};
    for (size_t i = 0; i < n; i++) {
        double p[3] = {1, x[i] / scale, (x[i] / scale) * (x[i] / scale)};
        for (int r = 0; r < m; r++) {
            for (int k = 0; k < m; k++)
                a[r][k] += p[r] * p[k];
            a[r][m] += p[r] * y[i];
        }
    }
    for (int col = 0; col < m; col++) { /* Gauss-Jordan with partial pivoting */
        int piv = col;
        for (int r = col + 1; r < m; r++)
            if (fabs(a[r][col]) > fabs(a[piv][col]))
                piv = r;
        if (fabs(a[piv][col]) < 1e-12)
            return false;
        for (int k = 0; k <= m; k++) {
            double t = a[col][k];
            a[col][k] = a[piv][k];
            a[piv][k] = t;
        }
        for (int r = 0; r < m; r++) {
            if (r == col)
                continue;
            double f = a[r][col] / a[col][col];
            for (int k = col; k <= m; k++)
                a[r][k] -= f * a[col][k];
        }
    }
    double s[3] = {1, 1 / scale, 1 / (scale * scale)};
    memset(c, 0, 3 * sizeof *c);
    for (int r = 0; r < m; r++)
        c[r] = a[r][m] / a[r][r] * s[r];
    return true;
}

/* Root mean square error of the law over the points, and whether every
 * point is within half a byte (sizes are whole bytes). */
static double rms_error(const struct vt_fit_law *l, const double *x, const double *y, size_t n,
                        bool *exact)
{
    double sum = 0, scale = 0;
    *exact = true;
    for (size_t i = 0; i < n; i++) {
        double e = vt_fit_law_at(l, x[i]) - y[i];
        scale = fmax(scale, fabs(y[i]));
        if (fabs(e) > 0.5 + 1e-9 * fabs(y[i]))
            *exact = false;
        sum += e * e;
    }
    return scale > 0 ? sqrt(sum / (double)n) / scale : 0;
}

static size_t distinct_values(const double *x, size_t n)
{
    size_t distinct = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < i && x[k] != x[i])
            k++;
        distinct += k == i;
    }
    return distinct;
}

void vt_fit_law_fit(const double *xs, const double *ys, size_t n, struct vt_fit_law *out)
{
    /* Most sites keep their sizes whatever the value: no solving. */
    bool same = true;
    for (size_t i = 1; i < n && same; i++)
        same = ys[i] == ys[0];
    if (same) {
        *out = (struct vt_fit_law){.kind = VT_LAW_CONSTANT, .c = {ys[0]},
                                   .points = distinct_values(xs, n)};
        return;
    }
    /* ... and most others grow on a line: tried through two points
     * before any solving. */
    size_t lo = 0, hi = 0;
    for (size_t i = 1; i < n; i++) {
        lo = xs[i] < xs[lo] ? i : lo;
        hi = xs[i] > xs[hi] ? i : hi;
    }
    if (xs[hi] > xs[lo]) {
        double slope = (ys[hi] - ys[lo]) / (xs[hi] - xs[lo]);
        struct vt_fit_law l = {.kind = VT_LAW_LINEAR, .c = {ys[lo] - slope * xs[lo], slope}};
        bool exact = true;
        for (size_t i = 0; i < n && exact; i++)
            exact = fabs(vt_fit_law_at(&l, xs[i]) - ys[i]) <= 0.5 + 1e-9 * fabs(ys[i]);
        if (exact) {
            l.points = distinct_values(xs, n);
            *out = l;
            return;
        }
    }
    /* Repeated values averaged: one point per distinct value. */
    double x[MAX_POINTS], y[MAX_POINTS];
    size_t cnt[MAX_POINTS], m = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < m && x[k] != xs[i])
            k++;
        if (k == m) {
            if (m == MAX_POINTS)
                continue;
            x[m] = xs[i], y[m] = 0, cnt[m] = 0, m++;
        }
        y[k] += ys[i], cnt[k]++;
    }
    for (size_t k = 0; k < m; k++)
        y[k] /= (double)cnt[k];
    memset(out, 0, sizeof *out);
    out->points = m;
    struct vt_fit_law best = {0};
    bool have = false;
    int max_deg = m > 2 ? 2 : (int)m - 1;
    for (int deg = 0; deg <= max_deg; deg++) {
        struct vt_fit_law l = {.kind = (enum vt_fit_law_kind)deg, .points = m};
        if (!least_squares(x, y, m, deg, l.c))
            continue;
        bool exact;
        l.residual = rms_error(&l, x, y, m, &exact);
        if (exact) {
            l.residual = 0;
            *out = l;
            return;
        }
        best = l, have = true;
    }
    if (have)
        *out = best;
}
