package io.gatehouse.bench.plot;

import javax.imageio.ImageIO;
import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Font;
import java.awt.FontMetrics;
import java.awt.Graphics2D;
import java.awt.RenderingHints;
import java.awt.image.BufferedImage;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/** A small line chart written as PNG with Java2D (headless): log-2 or linear x, linear or log-10 y, one line per series. */
public final class LineChart {
    private static final Color[] COLORS = {new Color(0x1f77b4), new Color(0xd62728), new Color(0x2ca02c),
            new Color(0xff7f0e), new Color(0x9467bd), new Color(0x8c564b)};
    private final String title;
    private final String xLabel;
    private final String yLabel;
    private boolean logX = true;
    private boolean logY;
    private final Map<String, double[][]> series = new LinkedHashMap<>();

    public LineChart(String title, String xLabel, String yLabel) {
        this.title = title;
        this.xLabel = xLabel;
        this.yLabel = yLabel;
    }

    public LineChart logY(boolean on) {
        logY = on;
        return this;
    }

    public LineChart logX(boolean on) {
        logX = on;
        return this;
    }

    public LineChart series(String name, double[] xs, double[] ys) {
        series.put(name, new double[][] {xs, ys});
        return this;
    }

    private double tx(double x) {
        return logX ? Math.log(x) / Math.log(2) : x;
    }

    private double ty(double y) {
        return logY ? Math.log10(Math.max(y, 1e-9)) : y;
    }

    public void write(Path file) throws IOException {
        int w = 980, h = 520, left = 95, right = 250, top = 50, bottom = 60;
        BufferedImage img = new BufferedImage(w, h, BufferedImage.TYPE_INT_RGB);
        Graphics2D g = img.createGraphics();
        g.setRenderingHint(RenderingHints.KEY_ANTIALIASING, RenderingHints.VALUE_ANTIALIAS_ON);
        g.setRenderingHint(RenderingHints.KEY_TEXT_ANTIALIASING, RenderingHints.VALUE_TEXT_ANTIALIAS_ON);
        g.setColor(Color.WHITE);
        g.fillRect(0, 0, w, h);
        double minX = Double.MAX_VALUE, maxX = -Double.MAX_VALUE, minY = logY ? Double.MAX_VALUE : 0, maxY = -Double.MAX_VALUE;
        for (double[][] s : series.values()) {
            for (int i = 0; i < s[0].length; i++) {
                if (Double.isNaN(s[1][i])) continue;
                minX = Math.min(minX, tx(s[0][i]));
                maxX = Math.max(maxX, tx(s[0][i]));
                minY = Math.min(minY, ty(s[1][i]));
                maxY = Math.max(maxY, ty(s[1][i]));
            }
        }
        if (logY) {
            minY = Math.floor(minY);
            maxY = Math.ceil(maxY);
        } else {
            maxY = niceCeil(maxY);
        }
        if (maxX == minX) maxX = minX + 1;
        if (maxY == minY) maxY = minY + 1;
        int pw = w - left - right, ph = h - top - bottom;
        g.setFont(new Font(Font.SANS_SERIF, Font.BOLD, 16));
        g.setColor(Color.BLACK);
        g.drawString(title, left, 28);
        g.setFont(new Font(Font.SANS_SERIF, Font.PLAIN, 12));
        FontMetrics fm = g.getFontMetrics();
        // grid and axes
        g.setColor(new Color(0xdddddd));
        int yTicks = logY ? (int) (maxY - minY) : 5;
        for (int i = 0; i <= yTicks; i++) {
            double v = minY + (maxY - minY) * i / yTicks;
            int y = top + ph - (int) Math.round(ph * (v - minY) / (maxY - minY));
            g.setColor(new Color(0xdddddd));
            g.drawLine(left, y, left + pw, y);
            g.setColor(Color.DARK_GRAY);
            String lab = fmt(logY ? Math.pow(10, v) : v);
            g.drawString(lab, left - 8 - fm.stringWidth(lab), y + 4);
        }
        for (double[][] s : series.values()) {
            for (double x : s[0]) {
                int px = left + (int) Math.round(pw * (tx(x) - minX) / (maxX - minX));
                g.setColor(new Color(0xeeeeee));
                g.drawLine(px, top, px, top + ph);
                g.setColor(Color.DARK_GRAY);
                String lab = x == Math.rint(x) && x < 1_000_000 ? String.format(Locale.ROOT, "%.0f", x) : fmt(x);
                g.drawString(lab, px - fm.stringWidth(lab) / 2, top + ph + 18);
            }
            break;
        }
        g.setColor(Color.BLACK);
        g.drawRect(left, top, pw, ph);
        g.drawString(xLabel, left + pw / 2 - fm.stringWidth(xLabel) / 2, h - 18);
        Graphics2D gr = (Graphics2D) g.create();
        gr.rotate(-Math.PI / 2);
        gr.drawString(yLabel + (logY ? " (log scale)" : ""), -(top + ph / 2 + fm.stringWidth(yLabel) / 2), 20);
        gr.dispose();
        // lines
        int k = 0;
        for (Map.Entry<String, double[][]> e : series.entrySet()) {
            Color c = COLORS[k % COLORS.length];
            g.setColor(c);
            g.setStroke(new BasicStroke(2.2f));
            double[][] s = e.getValue();
            int px0 = -1, py0 = -1;
            for (int i = 0; i < s[0].length; i++) {
                if (Double.isNaN(s[1][i])) continue;
                int px = left + (int) Math.round(pw * (tx(s[0][i]) - minX) / (maxX - minX));
                int py = top + ph - (int) Math.round(ph * (ty(s[1][i]) - minY) / (maxY - minY));
                if (px0 >= 0) g.drawLine(px0, py0, px, py);
                g.fillOval(px - 4, py - 4, 8, 8);
                px0 = px;
                py0 = py;
            }
            int ly = top + 20 + k * 22;
            g.drawLine(left + pw + 15, ly - 4, left + pw + 40, ly - 4);
            g.fillOval(left + pw + 24, ly - 8, 8, 8);
            g.setColor(Color.BLACK);
            g.drawString(e.getKey(), left + pw + 48, ly);
            k++;
        }
        g.dispose();
        ImageIO.write(img, "png", file.toFile());
    }

    static double niceCeil(double v) {
        if (v <= 0) return 1;
        double p = Math.pow(10, Math.floor(Math.log10(v)));
        for (double m : new double[] {1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10}) {
            if (m * p >= v) return m * p;
        }
        return 10 * p;
    }

    static String fmt(double v) {
        if (v >= 1_000_000) return String.format(Locale.ROOT, "%.3gM", v / 1e6);
        if (v >= 10_000) return String.format(Locale.ROOT, "%.0fk", v / 1e3);
        if (v >= 1000) return String.format(Locale.ROOT, "%.3gk", v / 1e3);
        if (v == Math.rint(v)) return String.format(Locale.ROOT, "%.0f", v);
        return String.format(Locale.ROOT, "%.2g", v);
    }
}
