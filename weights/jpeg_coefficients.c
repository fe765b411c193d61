/* Writes a baseline or progressive JPEG's quantized DCT coefficients and
 * quantization tables, as libjpeg reads them (jpeg_read_coefficients), for
 * weights/jpeg_projection_measure.py:
 *
 *   jpeg_coefficients IN.jpg OUT.bin
 *
 * OUT.bin, native int32 unless said: components, max h and v sampling factor,
 * 0; then per component: h and v sampling factor, width and height in blocks,
 * its quantization table (64, natural order), and its blocks (int16 x 64 each,
 * natural order, row by row). Exit 1 with a message on any error. */
#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>

#include <jpeglib.h>  /* after stdio.h and stddef.h, which it needs */

struct failure {
    struct jpeg_error_mgr mgr;
    jmp_buf jump;
};

static void fail(j_common_ptr c) {
    (*c->err->output_message)(c);
    longjmp(((struct failure*)c->err)->jump, 1);
}

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: %s IN.jpg OUT.bin\n", argv[0]);
        return 2;
    }
    FILE* in = fopen(argv[1], "rb");
    FILE* out = fopen(argv[2], "wb");
    if (!in || !out) {
        perror(in ? argv[2] : argv[1]);
        return 1;
    }
    struct jpeg_decompress_struct c;
    struct failure err;
    c.err = jpeg_std_error(&err.mgr);
    err.mgr.error_exit = fail;
    if (setjmp(err.jump)) {
        jpeg_destroy_decompress(&c);
        return 1;
    }
    jpeg_create_decompress(&c);
    jpeg_stdio_src(&c, in);
    jpeg_read_header(&c, TRUE);
    jvirt_barray_ptr* coefs = jpeg_read_coefficients(&c);
    const int head[4] = {c.num_components, c.max_h_samp_factor, c.max_v_samp_factor, 0};
    fwrite(head, sizeof(int), 4, out);
    for (int ci = 0; ci < c.num_components; ++ci) {
        const jpeg_component_info* comp = &c.comp_info[ci];
        const int dims[4] = {comp->h_samp_factor, comp->v_samp_factor, (int)comp->width_in_blocks,
                             (int)comp->height_in_blocks};
        fwrite(dims, sizeof(int), 4, out);
        int table[DCTSIZE2];
        for (int k = 0; k < DCTSIZE2; ++k) table[k] = comp->quant_table->quantval[k];
        fwrite(table, sizeof(int), DCTSIZE2, out);
        for (JDIMENSION row = 0; row < comp->height_in_blocks; ++row) {
            JBLOCKARRAY blocks = (*c.mem->access_virt_barray)((j_common_ptr)&c, coefs[ci], row, 1, FALSE);
            fwrite(blocks[0], sizeof(JBLOCK), comp->width_in_blocks, out);
        }
    }
    jpeg_finish_decompress(&c);
    jpeg_destroy_decompress(&c);
    fclose(in);
    return fclose(out) == 0 ? 0 : 1;
}
