//! PNG text with every glyph where the font puts it.
//!
//! plotters' ab_glyph text drawing places each glyph's ink box at the pen,
//! ignoring the glyph's left side bearing: a "1" (wide bearing) lands left
//! of its place and a "j" (negative bearing) right of it, so "15" reads
//! "1 5" and "m.json" "m. json". [`Glyphs`] wraps a bitmap backend and draws
//! text itself, at the same size, anchor and rotation, with each glyph's ink
//! at pen + bearing; everything else goes to the wrapped backend.

use ab_glyph::{point, Font, FontRef, ScaleFont};
use plotters_backend::text_anchor::{HPos, VPos};
use plotters_backend::{BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingBackend, DrawingErrorKind};

pub struct Glyphs<B> {
    inner: B,
    font: FontRef<'static>,
}

impl<B> Glyphs<B> {
    /// `inner`, its text drawn in `font` (the one plotters was given).
    pub fn new(inner: B, font: &'static [u8]) -> anyhow::Result<Self> {
        let font = FontRef::try_from_slice(font).map_err(|e| anyhow::anyhow!("the plot font: {e}"))?;
        Ok(Glyphs { inner, font })
    }
}

/// (x, y, coverage) of every inked pixel of `text` at `size` px, the pen
/// starting at (0, 0), y as plotters places it (the em's middle at size / 2).
fn ink(font: &FontRef<'static>, size: f32, text: &str) -> Vec<(i32, i32, f32)> {
    let font = font.as_scaled(size);
    let (mut pen, mut prev, mut px) = (0f32, None, Vec::new());
    for c in text.chars() {
        let id = font.glyph_id(c);
        if let Some(p) = prev {
            pen += font.kern(p, id);
        }
        prev = Some(id);
        let mut glyph = font.scaled_glyph(c);
        glyph.position = point(pen, 0.0);
        if let Some(outline) = font.outline_glyph(glyph) {
            let b = outline.px_bounds();
            let (gx, gy) = (b.min.x as i32, (size / 2.0 + b.min.y) as i32);
            outline.draw(|x, y, c| px.push((gx + x as i32, gy + y as i32, c)));
        }
        pen += font.h_advance(id);
    }
    px
}

impl<B: DrawingBackend> DrawingBackend for Glyphs<B> {
    type ErrorType = B::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        self.inner.get_size()
    }
    fn ensure_prepared(&mut self) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.ensure_prepared()
    }
    fn present(&mut self) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.present()
    }
    fn draw_pixel(&mut self, p: BackendCoord, c: BackendColor) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.draw_pixel(p, c)
    }
    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        s: &S,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.draw_line(from, to, s)
    }
    fn draw_rect<S: BackendStyle>(
        &mut self,
        a: BackendCoord,
        b: BackendCoord,
        s: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.draw_rect(a, b, s, fill)
    }
    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        s: &S,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.draw_path(path, s)
    }
    fn draw_circle<S: BackendStyle>(
        &mut self,
        c: BackendCoord,
        r: u32,
        s: &S,
        fill: bool,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.draw_circle(c, r, s, fill)
    }
    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        s: &S,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.fill_polygon(vert, s)
    }
    fn blit_bitmap(
        &mut self,
        pos: BackendCoord,
        size: (u32, u32),
        src: &[u8],
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        self.inner.blit_bitmap(pos, size, src)
    }

    /// plotters' default text drawing (anchor, rotation, clipping), the
    /// glyphs from [`ink`].
    fn draw_text<S: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &S,
        pos: BackendCoord,
    ) -> Result<(), DrawingErrorKind<B::ErrorType>> {
        let color = style.color();
        if color.alpha == 0.0 {
            return Ok(());
        }
        let ((min_x, min_y), (max_x, max_y)) =
            style.layout_box(text).map_err(|e| DrawingErrorKind::FontError(Box::new(e)))?;
        let dx = match style.anchor().h_pos {
            HPos::Left => 0,
            HPos::Right => -(max_x - min_x),
            HPos::Center => -(max_x - min_x) / 2,
        };
        let dy = match style.anchor().v_pos {
            VPos::Top => 0,
            VPos::Center => -(max_y - min_y) / 2,
            VPos::Bottom => -(max_y - min_y),
        };
        let trans = style.transform();
        let (w, h) = self.get_size();
        for (x, y, coverage) in ink(&self.font, style.size() as f32, text) {
            let (x, y) = trans.transform(x + dx - min_x, y + dy - min_y);
            let (x, y) = (pos.0 + x, pos.1 + y);
            if x >= 0 && x < w as i32 && y >= 0 && y < h as i32 {
                self.inner.draw_pixel((x, y), color.mix(coverage as f64))?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use plotters::prelude::*;

    fn leftmost(rgb: &[u8], w: usize) -> usize {
        rgb.chunks(3).enumerate().filter(|(_, p)| p[0] < 128).map(|(i, _)| i % w).min().expect("ink")
    }

    #[test]
    fn a_glyph_is_inked_after_its_bearing() {
        super::super::font();
        let (w, h) = (120usize, 60usize);
        let font = FontRef::try_from_slice(super::super::FONT).unwrap();
        // DejaVu Sans "1" has a left bearing of over 3 px at 36 px, which plotters drops.
        let bearing = font.as_scaled(36.0).h_side_bearing(font.glyph_id('1'));
        assert!(bearing >= 3.0, "{bearing}");
        let style = ("sans-serif", 36).into_font().color(&BLACK);
        let mut fixed = vec![255u8; w * h * 3];
        {
            let b = BitMapBackend::with_buffer(&mut fixed, (w as u32, h as u32));
            let root = Glyphs::new(b, super::super::FONT).unwrap().into_drawing_area();
            root.draw(&Text::new("1", (10, 10), style.clone())).unwrap();
            root.present().unwrap();
        }
        assert_eq!(leftmost(&fixed, w), 10 + bearing.floor() as usize);
    }
}
